//! The real server on a copy of the example organisation, through the API.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::http::get;
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read example") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A fresh database and a copy of `examples/org` served by the real binary.
async fn start() -> (Roster, tempfile::TempDir, sqlx::PgPool) {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = dir.path().join("org");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org"),
        &org,
    );
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        // As the README's first command: the monorepo's service files too.
        (
            "ROSTER_PROJECT_FILES",
            "project.yaml,services/*/project.yaml".to_string(),
        ),
    ];
    let roster = Roster::start(&env, dir.path()).await;
    (roster, dir, pool)
}

/// Every repository once none is pending any more: full name → JSON.
async fn settled(roster: &Roster, count: usize) -> BTreeMap<String, Value> {
    eventually("every repository reconciled", LIMIT, || async {
        let a = get(&roster.url("/api/v1/repos")).await.ok()?;
        let items = a.json()["items"].as_array()?.clone();
        let repos: BTreeMap<String, Value> = items
            .into_iter()
            .map(|r| (r["full_name"].as_str().unwrap_or_default().to_owned(), r))
            .collect();
        let done = repos.len() == count && repos.values().all(|r| r["status"] != "pending");
        done.then_some(repos)
    })
    .await
}

async fn repo(roster: &Roster, name: &str) -> Value {
    get(&roster.url(&format!("/api/v1/repos/local/{name}")))
        .await
        .expect("repo")
        .json()
}

#[tokio::test]
async fn each_reconcile_should_log_one_line_naming_the_repository() {
    let (roster, _dir, _pool) = start().await;
    let repos = settled(&roster, 13).await;
    // The parts of the line each repository's last reconcile writes.
    let expected: Vec<[String; 5]> = repos
        .iter()
        .map(|(full_name, repo)| {
            let status = repo["status"].as_str().unwrap_or_default();
            [
                format!("reconcile{{full_name=\"{full_name}\"}}"),
                " reconciled ".to_owned(),
                format!("key={}", repo["id"]),
                format!("outcome=\"{status}\""),
                "duration_ms=".to_owned(),
            ]
        })
        .collect();
    // A line is written just after the reconcile's commit: wait for them.
    eventually("a line naming each repository", LIMIT, || async {
        let logs = roster.logs();
        expected
            .iter()
            .all(|parts| {
                logs.lines()
                    .any(|line| parts.iter().all(|part| line.contains(part)))
            })
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn example_org_should_show_every_status_through_the_api() {
    let (roster, _dir, pool) = start().await;
    let repos = settled(&roster, 13).await;
    let finished: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT last_finished_at FROM listing_schedule")
            .fetch_one(&pool)
            .await
            .expect("listing schedule");
    assert!(
        finished.is_some(),
        "the complete start-up listing is recorded"
    );
    let status = |n: &str| {
        repos[&format!("local/{n}")]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for synced in [
        "analytics-pipeline",
        "billing",
        "checkout-service",
        "design-system",
        "legacy-reports",
        "notifications",
        "platform",
        "search-api",
    ] {
        assert_eq!(
            status(synced),
            "synced",
            "{synced}: {}",
            repos[&format!("local/{synced}")]
        );
    }
    assert_eq!(status("inventory"), "invalid");
    assert_eq!(status("status-page"), "invalid");
    assert_eq!(status("scratchpad"), "no_file");

    // The file's problems, one per line, with positions and fields: all of
    // them in the detail, the first one in the list.
    let inventory = repo(&roster, "inventory").await;
    let error = inventory["error"].as_str().expect("error text");
    assert_eq!(error.lines().count(), 5, "{error}");
    assert!(error.starts_with("project.yaml:2:7: name: "), "{error}");
    assert_eq!(
        repos["local/inventory"]["error"].as_str(),
        error.lines().next()
    );
    assert!(repos["local/status-page"]["error"]
        .as_str()
        .unwrap_or_default()
        .contains("descripton: unknown field"));

    // The monorepo registers its three projects.
    assert_eq!(
        repos["local/billing"]["projects"],
        serde_json::json!(["billing-api", "billing-worker", "invoice-renderer"])
    );

    // The monorepo with one file per service: each entry names its file.
    assert_eq!(
        repos["local/platform"]["projects"],
        serde_json::json!([
            "platform-gateway",
            "platform-gateway-config",
            "platform-identity",
            "platform-rate-limiter"
        ])
    );
    let gateway = get(&roster.url("/api/v1/projects/platform-gateway-config"))
        .await
        .expect("project")
        .json();
    assert_eq!(gateway["path"], "services/gateway/project.yaml");
    assert_eq!(checkout_path(&roster).await, "project.yaml");

    // Exactly one of the two claimants owns `payments-gateway`; the other names it.
    let a = &repos["local/payments-gateway"];
    let b = &repos["local/payments-gateway-v2"];
    let (winner, loser) = if a["status"] == "synced" {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(winner["status"], "synced");
    assert_eq!(loser["status"], "conflict");
    let owner = get(&roster.url("/api/v1/projects/payments-gateway"))
        .await
        .expect("project")
        .json();
    assert_eq!(owner["repo"], winner["full_name"]);
    assert!(loser["error"]
        .as_str()
        .unwrap_or_default()
        .contains(winner["full_name"].as_str().unwrap_or_default()));
    assert!(b["projects"]
        .as_array()
        .expect("list")
        .contains(&Value::from("payments-gateway-simulator")));

    // One entry with every field of the file.
    let checkout = get(&roster.url("/api/v1/projects/checkout-api"))
        .await
        .expect("project")
        .json();
    assert_eq!(checkout["owner"], "team-payments");
    assert_eq!(checkout["lifecycle"], "production");
    assert_eq!(checkout["tags"], serde_json::json!(["payments", "grpc"]));
    assert_eq!(checkout["labels"]["tier"], "1");
    assert_eq!(
        checkout["links"][0]["url"],
        "https://runbooks.example.com/checkout"
    );
    assert_eq!(checkout["repo"], "local/checkout-service");
    assert_eq!(
        checkout["source_sha"],
        repos["local/checkout-service"]["synced_sha"]
    );

    // The detail route carries the events of the reconcile.
    let detail = repo(&roster, "checkout-service").await;
    assert_eq!(detail["events"][0]["kind"], "synced");
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn editing_a_file_should_reach_the_api_and_a_broken_file_should_keep_the_old_entries() {
    let (roster, dir, _pool) = start().await;
    settled(&roster, 13).await;
    let org = dir.path().join("org");

    // An edit shows up without any listing (the watcher enqueues it).
    let file = org.join("checkout-service/project.yaml");
    let text = std::fs::read_to_string(&file)
        .expect("read")
        .replace("Takes payments at checkout", "Takes every payment");
    std::fs::write(&file, text).expect("write");
    eventually("the new description", LIMIT, || async {
        let p = get(&roster.url("/api/v1/projects/checkout-api"))
            .await
            .ok()?
            .json();
        (p["description"] == "Takes every payment").then_some(())
    })
    .await;

    // A broken file: invalid with the reason, the entries kept as they were.
    let billing = org.join("billing/project.yaml");
    let good = std::fs::read_to_string(&billing).expect("read");
    std::fs::write(&billing, "projects:\n  - name: Billing API\n    owner: [\n").expect("write");
    let broken = eventually("billing invalid", LIMIT, || async {
        let r = repo(&roster, "billing").await;
        (r["status"] == "invalid").then_some(r)
    })
    .await;
    assert!(
        broken["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("project.yaml:"),
        "{broken}"
    );
    assert_eq!(
        broken["projects"],
        serde_json::json!(["billing-api", "billing-worker", "invoice-renderer"])
    );
    let entry = get(&roster.url("/api/v1/projects/billing-api"))
        .await
        .expect("entry");
    assert_eq!(entry.status, 200);

    // Fixed again: synced.
    std::fs::write(&billing, good).expect("write");
    eventually("billing synced", LIMIT, || async {
        (repo(&roster, "billing").await["status"] == "synced").then_some(())
    })
    .await;

    // A folder removed: its entries go; a new folder: registered.
    std::fs::remove_dir_all(org.join("search-api")).expect("rm");
    std::fs::create_dir(org.join("new-service")).expect("mkdir");
    std::fs::write(
        org.join("new-service/project.yaml"),
        "name: new-service\nowner: team-new\n",
    )
    .expect("write");
    eventually("removal and addition", LIMIT, || async {
        let gone = repo(&roster, "search-api").await["status"] == "removed";
        let added = get(&roster.url("/api/v1/projects/new-service"))
            .await
            .ok()?
            .status
            == 200;
        (gone && added).then_some(())
    })
    .await;
    let search = get(&roster.url("/api/v1/projects/search-api"))
        .await
        .expect("answer");
    assert_eq!(search.status, 404);
}

async fn checkout_path(roster: &Roster) -> String {
    let checkout = get(&roster.url("/api/v1/projects/checkout-api"))
        .await
        .expect("project")
        .json();
    checkout["path"].as_str().unwrap_or_default().to_owned()
}

/// The entries of `local/platform`, name → path.
async fn platform_paths(roster: &Roster) -> BTreeMap<String, String> {
    let detail = repo(roster, "platform").await;
    detail["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let field = |f: &str| e[f].as_str().unwrap_or_default().to_owned();
                    (field("name"), field("path"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn each_service_file_of_a_monorepo_should_be_applied_kept_moved_and_removed_on_its_own() {
    let (roster, dir, _pool) = start().await;
    settled(&roster, 13).await;
    let services = dir.path().join("org/platform/services");

    // One file breaks a rule: the repository is invalid, the error names
    // that file's line, its entries stay; another file's edit is applied.
    let identity = services.join("identity/project.yaml");
    std::fs::write(&identity, "name: platform-identity\nowner: \"\"\n").expect("write");
    let limiter = services.join("rate-limiter/project.yaml");
    std::fs::write(
        &limiter,
        "name: platform-rate-limiter\nowner: team-sre\nlifecycle: production\n",
    )
    .expect("write");
    let broken = eventually(
        "platform invalid, the other file applied",
        LIMIT,
        || async {
            let r = repo(&roster, "platform").await;
            let lifecycle = get(&roster.url("/api/v1/projects/platform-rate-limiter"))
                .await
                .ok()?
                .json()["lifecycle"]
                .clone();
            (r["status"] == "invalid" && lifecycle == "production").then_some(r)
        },
    )
    .await;
    assert_eq!(
        broken["error"],
        "services/identity/project.yaml:2:8: owner: must not be empty"
    );
    assert_eq!(platform_paths(&roster).await.len(), 4, "entries kept");
    let page = get(&roster.url("/repos/local/platform"))
        .await
        .expect("page")
        .body;
    assert!(
        page.contains("<code>services/identity/project.yaml</code>"),
        "each entry names its file"
    );

    // Fixed, and the gateway's folder renamed: its two entries move, they
    // are changed (new path), never removed and created again.
    std::fs::write(&identity, "name: platform-identity\nowner: team-sre\n").expect("write");
    std::fs::rename(services.join("gateway"), services.join("edge")).expect("rename");
    eventually("moved", LIMIT, || async {
        let paths = platform_paths(&roster).await;
        let moved =
            paths.get("platform-gateway").map(String::as_str) == Some("services/edge/project.yaml");
        (moved && repo(&roster, "platform").await["status"] == "synced").then_some(())
    })
    .await;
    let history = get(&roster.url("/api/v1/projects/platform-gateway/history"))
        .await
        .expect("history")
        .json();
    let kinds: Vec<&str> = history["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|c| c["kind"].as_str())
        .collect();
    assert_eq!(kinds, vec!["changed", "created"], "{history}");
    assert_eq!(
        history["items"][0]["before"]["path"],
        "services/gateway/project.yaml"
    );
    assert_eq!(
        history["items"][0]["after"]["path"],
        "services/edge/project.yaml"
    );

    // A name declared in a second file: the first path keeps it, the other
    // file is a conflict naming both.
    std::fs::create_dir(services.join("zeta")).expect("mkdir");
    std::fs::write(
        services.join("zeta/project.yaml"),
        "name: platform-identity\nowner: team-sre\n",
    )
    .expect("write");
    let conflict = eventually("conflict", LIMIT, || async {
        let r = repo(&roster, "platform").await;
        (r["status"] == "conflict").then_some(r)
    })
    .await;
    assert_eq!(
        conflict["error"],
        "services/zeta/project.yaml: name \"platform-identity\" is also declared in \
         services/identity/project.yaml, which keeps it"
    );
    assert_eq!(
        platform_paths(&roster)
            .await
            .get("platform-identity")
            .map(String::as_str),
        Some("services/identity/project.yaml")
    );

    // A file removed: its entries go, the others stay.
    std::fs::remove_dir_all(services.join("zeta")).expect("rm");
    std::fs::remove_file(&limiter).expect("rm");
    eventually("removed file", LIMIT, || async {
        let paths = platform_paths(&roster).await;
        let synced = repo(&roster, "platform").await["status"] == "synced";
        (synced && paths.len() == 3 && !paths.contains_key("platform-rate-limiter")).then_some(())
    })
    .await;
}
