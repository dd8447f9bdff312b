//! The dashboard in a real browser (headless Chromium): the overview of a
//! seeded registry loads, a repository link leads to its page, and both are
//! photographed.
//!
//! Skipped with a note when `chromium` is not on PATH (`scripts/test`
//! installs it). Screenshots go to a temporary folder, or to
//! `docs/screenshots/` with `ROSTER_UPDATE_SCREENSHOTS=1`.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use roster::intake::deliveries::{record, NewDelivery};
use sqlx::PgPool;
use support::router::{self, Options};
use support::seed::{event, Seed};

/// Longest a single Chromium run may take.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// `chromium` on PATH, if any.
pub(crate) fn find_chromium() -> Option<PathBuf> {
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

pub(crate) async fn dump_dom(binary: &Path, profile: &Path, url: &str) -> String {
    chromium(binary, profile, &["--dump-dom".to_owned()], url).await
}

pub(crate) async fn screenshot(
    binary: &Path,
    profile: &Path,
    url: &str,
    file: &Path,
    size: (u32, u32),
) {
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

/// Where a repository of the seeded organisation stands.
enum State {
    /// Its file applied this many minutes ago.
    Synced(u64),
    NoFile,
    Invalid(&'static str),
    /// Its reads failed [`FAILED_READS`] times in a row.
    Failing(&'static str),
    /// Its file applied this many minutes ago, one of its names another's.
    Conflict(u64),
    Removed(&'static str),
    Pending,
}

/// Failed reads of the repository in error, and its tries in the queue.
const FAILED_READS: u32 = 4;

const SHAS: [&str; 4] = [
    "4f9c2d17b8e3a6015c9d2e7f3a1b6c8d9e0f1a2b",
    "a81e6c03d4f2b9e7c5a3d1f0e8b6c4a2d0f9e7c5",
    "0c7d5e3f1a9b8c6d4e2f0a1b3c5d7e9f1a3b5c7d",
    "e2b4d6f8a0c1e3f5a7b9d0c2e4f6a8b1d3f5a7c9",
];

fn org() -> Vec<(i64, &'static str, State)> {
    vec![
        (101, "checkout", State::Synced(2)),
        (102, "payments-gateway", State::Synced(4)),
        (103, "search", State::Synced(7)),
        (104, "identity", State::Synced(12)),
        (105, "notifications", State::Synced(16)),
        (106, "analytics", State::Synced(23)),
        (107, "ledger", State::Synced(31)),
        (108, "mobile-app", State::Synced(44)),
        (109, "recommendations", State::Synced(58)),
        (110, "docs-site", State::NoFile),
        (
            111,
            "web-shop",
            State::Invalid(
                "project.yaml:4:8: owner: must not be empty\n\
                 project.yaml:12:5: links[1].url: must be an http or https URL",
            ),
        ),
        (
            112,
            "inventory",
            State::Failing("GitHub answered 502 Bad Gateway while reading project.yaml"),
        ),
        (113, "legacy-billing", State::Conflict(9)),
        (114, "old-api", State::Removed("archived on GitHub")),
        (115, "new-service", State::Pending),
    ]
}

/// The projects of the repositories' files: repository, name, owner,
/// description, lifecycle, tags.
const PROJECTS: [(i64, &str, &str, &str, &str, &str); 11] = [
    (
        101,
        "checkout-api",
        "team-payments",
        "Takes payments at checkout",
        "production",
        "payments, grpc",
    ),
    (
        101,
        "checkout-worker",
        "team-payments",
        "Settles captured payments in the background",
        "production",
        "payments",
    ),
    (
        102,
        "payments-gateway",
        "team-payments",
        "Talks to the card networks",
        "production",
        "payments, pci",
    ),
    (
        103,
        "search-api",
        "team-discovery",
        "Full-text product search",
        "production",
        "search",
    ),
    (
        104,
        "identity",
        "team-platform",
        "Sign-in and tokens for every app",
        "production",
        "auth",
    ),
    (
        105,
        "notifier",
        "team-platform",
        "E-mail, SMS and push notifications",
        "experimental",
        "messaging",
    ),
    (
        106,
        "analytics-pipeline",
        "team-data",
        "Event ingestion and daily reports",
        "production",
        "data",
    ),
    (
        107,
        "ledger",
        "team-finance",
        "Double-entry accounting of every order",
        "production",
        "finance",
    ),
    (
        108,
        "mobile-app",
        "team-mobile",
        "The iOS and Android shop",
        "production",
        "mobile",
    ),
    (
        109,
        "recommender",
        "team-discovery",
        "Product recommendations",
        "deprecated",
        "ml",
    ),
    (
        113,
        "billing-export",
        "team-finance",
        "Monthly invoices export",
        "deprecated",
        "finance",
    ),
];

/// The project file of repository `id`: its [`PROJECTS`], and for the one
/// in conflict also `checkout-api`, which acme/checkout owns.
fn project_file(id: i64) -> String {
    let mut yaml = String::from("projects:\n");
    for (_, name, owner, description, lifecycle, tags) in PROJECTS.iter().filter(|p| p.0 == id) {
        yaml.push_str(&format!(
            "  - name: {name}
    owner: {owner}
    description: {description}
    lifecycle: {lifecycle}
    tags: [{tags}]
    links:
      - title: Runbook
        url: https://runbooks.example.com/{name}
      - title: Dashboards
        url: https://grafana.example.com/d/{name}
    labels:
      tier: \"1\"
      cluster: eu-west-1
"
        ));
    }
    if id == 113 {
        yaml.push_str("  - name: checkout-api\n    owner: team-finance\n");
    }
    yaml
}

pub(crate) async fn seed(pool: &PgPool) {
    let minutes = |m: u64| Duration::from_secs(m * 60);
    let seed = Seed::new(pool);
    for (i, (id, name, state)) in org().into_iter().enumerate() {
        let repo = seed.repo(id, "acme", name).await;
        let sha = SHAS[i % SHAS.len()];
        let repo = match state {
            State::Synced(ago) => {
                let repo = repo.synced(sha, &project_file(id)).await;
                repo.last_synced(minutes(ago)).await
            }
            State::Conflict(ago) => {
                let repo = repo.in_conflict(sha, &project_file(id)).await;
                repo.last_synced(minutes(ago)).await
            }
            State::NoFile => repo.no_file().await,
            State::Invalid(message) => repo.invalid(message).await,
            State::Failing(message) => {
                let mut repo = repo;
                for _ in 0..FAILED_READS {
                    repo = repo.failed(message).await;
                }
                repo
            }
            State::Removed(reason) => repo.removed(reason).await,
            State::Pending => repo,
        };
        let repo = repo
            .entries_dated(minutes(40 * 24 * 60), minutes(120))
            .await;
        if id == 101 {
            repo.timeline(&[
                event(
                    "synced",
                    "applied 1 entry: created checkout-api",
                    minutes(3 * 24 * 60),
                ),
                event(
                    "invalid",
                    "project.yaml:6:3: tags[2]: must be like a name",
                    minutes(26 * 60),
                ),
                event(
                    "synced",
                    "applied 2 entries: created checkout-worker, updated checkout-api",
                    minutes(25 * 60),
                ),
                event("synced", "nothing changed", minutes(2)),
            ])
            .await;
        }
    }
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
    let error = "GitHub answered 502";
    seed.retrying(112, FAILED_READS, error, minutes(3)).await;
    seed.queued(115, Duration::from_secs(4)).await;
    seed.listing_ran(minutes(14), minutes(13)).await;
}

/// Starts the real router over a seeded database on an ephemeral port.
async fn serve() -> String {
    let options = Options {
        api_token: Some("browser-test-token"),
        github_web_url: Some("https://github.com"),
    };
    let f = router::fixture(options, |_, metrics| {
        metrics.rate_limit_remaining(roster::source::InstallationId(40_112_518), 4_873);
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

pub(crate) fn screenshot_dir() -> (PathBuf, Option<tempfile::TempDir>) {
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

    // The Changes page: the organisation's change stream, newest first.
    let changes = dump_dom(&binary, profile.path(), &format!("{base}/changes")).await;
    for expected in [
        "id=\"live-stream\"",
        "<span class=\"outcome outcome-created\">created</span>",
        "<a href=\"/projects/checkout-api\">checkout-api</a>",
    ] {
        assert!(
            changes.contains(expected),
            "{expected} on the Changes page:\n{changes}"
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
    screenshot(
        &binary,
        profile.path(),
        &format!("{base}/changes"),
        &dir.join("changes.png"),
        (1280, 1000),
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
