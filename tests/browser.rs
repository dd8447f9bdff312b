//! The dashboard in a real browser (headless Chromium): the overview of a
//! seeded registry loads, a repository link leads to its page, and both are
//! photographed.
//!
//! Skipped with a note when `chromium` is not on PATH (`scripts/test`
//! installs it). Screenshots go to a temporary folder, or to
//! `docs/screenshots/` with `ROSTER_UPDATE_SCREENSHOTS=1`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use roster::github::webhook::deliveries::{record, NewDelivery};
use serde_json::json;
use sqlx::PgPool;
use support::router::{self, Options};

/// Longest a single Chromium run may take.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// `chromium` on PATH, if any.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
}

/// Runs Chromium headless on `url` with `args` (`--dump-dom`,
/// `--screenshot=…`), in a fresh profile; returns its standard output.
async fn chromium(binary: &Path, profile: &Path, args: &[String], url: &str) -> String {
    let mut command = tokio::process::Command::new(binary);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .kill_on_drop(true);
    let output = tokio::time::timeout(BROWSER_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("chromium did not finish within {BROWSER_TIMEOUT:?}"))
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

async fn dump_dom(binary: &Path, profile: &Path, url: &str) -> String {
    chromium(binary, profile, &["--dump-dom".to_owned()], url).await
}

async fn screenshot(binary: &Path, profile: &Path, url: &str, file: &Path, size: (u32, u32)) {
    let args = [
        format!("--screenshot={}", file.display()),
        format!("--window-size={},{}", size.0, size.1),
    ];
    chromium(binary, profile, &args, url).await;
    let bytes = std::fs::read(file).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", file.display());
    assert!(bytes.len() > 10_000, "{} has content", file.display());
}

/// The href of the link whose text is `text`, as Chromium serialised it.
fn href_of(dom: &str, text: &str) -> Option<String> {
    let end = dom.find(&format!("\">{text}</a>"))?;
    let start = dom[..end].rfind("href=\"")? + "href=\"".len();
    Some(dom[start..end].replace("&amp;", "&"))
}

struct Repo {
    id: i64,
    name: &'static str,
    status: &'static str,
    error: Option<&'static str>,
    /// Minutes since the last sync.
    synced_ago: Option<i32>,
}

const SHAS: [&str; 4] = [
    "4f9c2d17b8e3a6015c9d2e7f3a1b6c8d9e0f1a2b",
    "a81e6c03d4f2b9e7c5a3d1f0e8b6c4a2d0f9e7c5",
    "0c7d5e3f1a9b8c6d4e2f0a1b3c5d7e9f1a3b5c7d",
    "e2b4d6f8a0c1e3f5a7b9d0c2e4f6a8b1d3f5a7c9",
];

fn org() -> Vec<Repo> {
    let repo = |id, name, status, error, synced_ago| Repo {
        id,
        name,
        status,
        error,
        synced_ago,
    };
    vec![
        repo(101, "checkout", "synced", None, Some(2)),
        repo(102, "payments-gateway", "synced", None, Some(4)),
        repo(103, "search", "synced", None, Some(7)),
        repo(104, "identity", "synced", None, Some(12)),
        repo(105, "notifications", "synced", None, Some(16)),
        repo(106, "analytics", "synced", None, Some(23)),
        repo(107, "ledger", "synced", None, Some(31)),
        repo(108, "mobile-app", "synced", None, Some(44)),
        repo(109, "recommendations", "synced", None, Some(58)),
        repo(110, "docs-site", "no_file", None, None),
        repo(
            111,
            "web-shop",
            "invalid",
            Some(
                "project.yaml:4:8: owner: must not be empty\n\
                 project.yaml:12:5: links[1].url: must be an http or https URL",
            ),
            None,
        ),
        repo(
            112,
            "inventory",
            "error",
            Some("GitHub answered 502 Bad Gateway while reading project.yaml"),
            None,
        ),
        repo(
            113,
            "legacy-billing",
            "conflict",
            Some("project.yaml:2:7: projects[0].name: checkout-api is already owned by acme/checkout"),
            Some(9),
        ),
        repo(114, "old-api", "removed", Some("archived on GitHub"), None),
        repo(115, "new-service", "pending", None, None),
    ]
}

async fn seed(pool: &PgPool) {
    for (i, repo) in org().into_iter().enumerate() {
        let applied = matches!(repo.status, "synced" | "conflict");
        sqlx::query(
            "insert into repositories (id, owner, name, status, error, synced_sha,
                 last_synced_at, default_branch, attempts, conflicts)
             values ($1, 'acme', $2, $3, $4, $5,
                 now() - make_interval(mins => $6), 'main', $7, $8)",
        )
        .bind(repo.id)
        .bind(repo.name)
        .bind(repo.status)
        .bind(repo.error)
        .bind(applied.then_some(SHAS[i % SHAS.len()]))
        .bind(repo.synced_ago)
        .bind(if repo.status == "error" { 4 } else { 0 })
        .bind(if repo.status == "conflict" {
            vec!["checkout-api"]
        } else {
            vec![]
        })
        .execute(pool)
        .await
        .expect("insert repository");
    }
    let entries = [
        (
            101,
            "checkout-api",
            "team-payments",
            "Takes payments at checkout",
            "production",
            vec!["payments", "grpc"],
        ),
        (
            101,
            "checkout-worker",
            "team-payments",
            "Settles captured payments in the background",
            "production",
            vec!["payments"],
        ),
        (
            102,
            "payments-gateway",
            "team-payments",
            "Talks to the card networks",
            "production",
            vec!["payments", "pci"],
        ),
        (
            103,
            "search-api",
            "team-discovery",
            "Full-text product search",
            "production",
            vec!["search"],
        ),
        (
            104,
            "identity",
            "team-platform",
            "Sign-in and tokens for every app",
            "production",
            vec!["auth"],
        ),
        (
            105,
            "notifier",
            "team-platform",
            "E-mail, SMS and push notifications",
            "experimental",
            vec!["messaging"],
        ),
        (
            106,
            "analytics-pipeline",
            "team-data",
            "Event ingestion and daily reports",
            "production",
            vec!["data"],
        ),
        (
            107,
            "ledger",
            "team-finance",
            "Double-entry accounting of every order",
            "production",
            vec!["finance"],
        ),
        (
            108,
            "mobile-app",
            "team-mobile",
            "The iOS and Android shop",
            "production",
            vec!["mobile"],
        ),
        (
            109,
            "recommender",
            "team-discovery",
            "Product recommendations",
            "deprecated",
            vec!["ml"],
        ),
        (
            113,
            "billing-export",
            "team-finance",
            "Monthly invoices export",
            "deprecated",
            vec!["finance"],
        ),
    ];
    for (repo_id, name, owner, description, lifecycle, tags) in entries {
        sqlx::query(
            "insert into entries (name, repo_id, owner, description, lifecycle, tags, links,
                 labels, source_sha, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() - interval '40 days',
                 now() - interval '2 hours')",
        )
        .bind(name)
        .bind(repo_id)
        .bind(owner)
        .bind(description)
        .bind(lifecycle)
        .bind(tags)
        .bind(json!([
            {"title": "Runbook", "url": format!("https://runbooks.example.com/{name}")},
            {"title": "Dashboards", "url": format!("https://grafana.example.com/d/{name}")}
        ]))
        .bind(json!({"tier": "1", "cluster": "eu-west-1"}))
        .bind(SHAS[0])
        .execute(pool)
        .await
        .expect("insert entry");
    }
    sqlx::query(
        "insert into events (repo_id, at, kind, message) values
             (101, now() - interval '3 days', 'synced', 'applied 1 entry: created checkout-api'),
             (101, now() - interval '26 hours', 'invalid', 'project.yaml:6:3: tags[2]: must be like a name'),
             (101, now() - interval '25 hours', 'synced', 'applied 2 entries: created checkout-worker, updated checkout-api'),
             (101, now() - interval '2 minutes', 'synced', 'nothing changed')",
    )
    .execute(pool)
    .await
    .expect("insert events");
    for (id, event, action, minutes_ago) in [
        ("5e1f2a10-0000-4000-8000-000000000001", "push", None, 2),
        (
            "5e1f2a10-0000-4000-8000-000000000002",
            "repository",
            Some("edited"),
            90,
        ),
    ] {
        let delivery = NewDelivery {
            id,
            event,
            action,
            repo: Some("acme/checkout"),
            outcome: "queued",
        };
        record(pool, &delivery).await.expect("record delivery");
        sqlx::query("update deliveries set at = now() - make_interval(mins => $2) where id = $1")
            .bind(id)
            .bind(minutes_ago)
            .execute(pool)
            .await
            .expect("age delivery");
    }
    sqlx::query(
        "insert into queue (repo_id, enqueued_at, not_before, attempts, last_error) values
             (112, now() - interval '40 minutes', now() + interval '3 minutes', 4, 'GitHub answered 502'),
             (115, now() - interval '4 seconds', now(), 0, null)",
    )
    .execute(pool)
    .await
    .expect("queue");
    sqlx::query(
        "update listing_schedule set last_started_at = now() - interval '14 minutes',
             last_finished_at = now() - interval '13 minutes'",
    )
    .execute(pool)
    .await
    .expect("listing schedule");
}

/// Starts the real router over a seeded database on an ephemeral port.
async fn serve() -> String {
    let options = Options {
        api_token: Some("browser-test-token"),
        github_web_url: Some("https://github.com"),
    };
    let f = router::fixture(options, |_, metrics| {
        metrics.rate_limit_remaining(40_112_518, 4_873);
    })
    .await;
    seed(&f.pool).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, f.app).await });
    format!("http://{address}")
}

fn screenshot_dir() -> (PathBuf, Option<tempfile::TempDir>) {
    if std::env::var("ROSTER_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
        std::fs::create_dir_all(&dir).expect("docs/screenshots");
        (dir, None)
    } else {
        let temp = tempfile::tempdir().expect("temp dir");
        (temp.path().to_path_buf(), Some(temp))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_should_load_the_overview_follow_a_repo_link_and_take_screenshots() {
    let Some(binary) = find_chromium() else {
        eprintln!(
            "note: chromium is not on PATH; skipping the browser test (scripts/test installs it)"
        );
        return;
    };
    let base = serve().await;
    let profile = tempfile::tempdir().expect("profile dir");

    let overview = dump_dom(&binary, profile.path(), &format!("{base}/")).await;
    for name in [
        "acme/checkout",
        "acme/web-shop",
        "acme/inventory",
        "acme/legacy-billing",
    ] {
        assert!(
            overview.contains(&format!(">{name}</a>")),
            "{name} on the overview:\n{overview}"
        );
    }
    assert!(overview.contains("of 15 synced"), "{overview}");

    // The refresh script swaps the table in place after 10 s (virtual time:
    // Chromium runs the page's timers ahead without waiting for them).
    let refreshed = chromium(
        &binary,
        profile.path(),
        &[
            "--virtual-time-budget=15000".to_owned(),
            "--dump-dom".to_owned(),
        ],
        &format!("{base}/?status=error"),
    )
    .await;
    assert!(refreshed.contains("live · updated "), "{refreshed}");
    assert!(refreshed.contains(">acme/inventory</a>"), "{refreshed}");
    assert!(
        !refreshed.contains(">acme/checkout</a>"),
        "the filter stays"
    );

    let href = href_of(&overview, "acme/checkout").expect("a link to acme/checkout");
    assert_eq!(href, "/repos/acme/checkout");
    let detail = dump_dom(&binary, profile.path(), &format!("{base}{href}")).await;
    assert!(
        detail.contains("<h1 class=\"repo-title\">acme/checkout</h1>"),
        "{detail}"
    );
    for expected in [
        "id=\"entry-checkout-api\"",
        "Settles captured payments in the background",
        "nothing changed",
        "https://github.com/acme/checkout/blob/main/project.yaml",
    ] {
        assert!(
            detail.contains(expected),
            "{expected} on the repository page:\n{detail}"
        );
    }

    let (dir, _keep) = screenshot_dir();
    screenshot(
        &binary,
        profile.path(),
        &format!("{base}/"),
        &dir.join("overview.png"),
        (1280, 900),
    )
    .await;
    screenshot(
        &binary,
        profile.path(),
        &format!("{base}/repos/acme/checkout"),
        &dir.join("repo.png"),
        (1280, 1100),
    )
    .await;
    // A phone's width: the tables turn into one card per repository.
    screenshot(
        &binary,
        profile.path(),
        &format!("{base}/"),
        &dir.join("overview-phone.png"),
        (390, 1400),
    )
    .await;
    eprintln!("screenshots in {}", dir.display());
}
