//! The registry's bounds of docs/contract.md#bounds against a real PostgreSQL: at most 100
//! projects per repository, a stored error of at most 16 KiB cut at a line
//! boundary, repeated reconciles folded into one event with a count, and
//! list routes that show only the first line of an error.

use crate::support::registry::{github_repo, handler, queue};

use chrono::{DateTime, Utc};
use roster::controller::{Failure, Handler};
use roster::db::testing::fresh_database;
use roster::project::{self, MAX_PROJECTS};
use roster::registry::{
    get_repo, list_repos, RegistryHandler, RepoFilter, MAX_ERROR_BYTES, MAX_EVENT_BYTES,
};
use roster::source::{FileState, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

struct Fixture {
    pool: PgPool,
    handler: RegistryHandler,
}

async fn fixture() -> Fixture {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    Fixture { pool, handler }
}

fn info() -> RepoInfo {
    github_repo("acme", "mono", 7)
}

fn found(sha: &str, yaml: &str) -> Observed {
    Observed::Present {
        repo: info(),
        file: FileState::Found {
            sha: sha.to_string(),
            bytes: yaml.as_bytes().to_vec(),
        },
    }
}

const GOOD: &str = "projects:
  - name: mono-api
    owner: team-a
    description: The API
  - name: mono-worker
    owner: team-a
";

/// `projects:` listing `count` projects; each has a lifecycle of
/// `lifecycle` when given.
fn projects(count: usize, lifecycle: Option<&str>) -> String {
    let mut yaml = String::from("projects:\n");
    for n in 0..count {
        yaml.push_str(&format!("  - name: p{n}\n    owner: team\n"));
        if let Some(lifecycle) = lifecycle {
            yaml.push_str(&format!("    lifecycle: {lifecycle}\n"));
        }
    }
    yaml
}

#[derive(Debug, PartialEq)]
struct Entry {
    name: String,
    owner: String,
    description: Option<String>,
    source_sha: String,
    updated_at: DateTime<Utc>,
}

roster::from_row!(Entry {
    name,
    owner,
    description,
    source_sha,
    updated_at
});

async fn entries(pool: &PgPool) -> Vec<Entry> {
    sqlx::query_as(
        "select name, owner, description, source_sha, updated_at from entries order by name",
    )
    .fetch_all(pool)
    .await
    .expect("entries")
}

#[derive(Debug, PartialEq)]
struct Row {
    status: String,
    error: Option<String>,
    synced_sha: Option<String>,
    updated_at: DateTime<Utc>,
}

roster::from_row!(Row {
    status,
    error,
    synced_sha,
    updated_at
});

async fn row(pool: &PgPool) -> Row {
    sqlx::query_as("select status, error, synced_sha, updated_at from repositories where id = 1")
        .fetch_one(pool)
        .await
        .expect("repository")
}

#[derive(Debug, PartialEq)]
struct Event {
    at: DateTime<Utc>,
    kind: String,
    message: String,
    count: i64,
}

roster::from_row!(Event {
    at,
    kind,
    message,
    count
});

/// Every event of the repository, newest first.
async fn events(pool: &PgPool) -> Vec<Event> {
    sqlx::query_as("select at, kind, message, count from events where repo_id = 1 order by id desc")
        .fetch_all(pool)
        .await
        .expect("events")
}

async fn synced(f: &Fixture) -> Vec<Entry> {
    let outcome = f
        .handler
        .apply(&RepoId(1), Ok(found("aaaaaaa1", GOOD)))
        .await;
    assert_eq!(outcome, Ok("synced"));
    entries(&f.pool).await
}

#[tokio::test]
async fn a_hundred_projects_should_be_registered() {
    let f = fixture().await;
    let outcome = f
        .handler
        .apply(
            &RepoId(1),
            Ok(found("aaaaaaa1", &projects(MAX_PROJECTS, None))),
        )
        .await;
    assert_eq!(outcome, Ok("synced"));
    assert_eq!(entries(&f.pool).await.len(), MAX_PROJECTS);
}

#[tokio::test]
async fn a_hundred_and_one_projects_should_be_invalid_and_keep_the_entries() {
    let f = fixture().await;
    let before = synced(&f).await;

    let outcome = f
        .handler
        .apply(
            &RepoId(1),
            Ok(found("bbbbbbb2", &projects(MAX_PROJECTS + 1, None))),
        )
        .await;
    assert_eq!(outcome, Ok("invalid"));
    let row = row(&f.pool).await;
    assert_eq!(row.status, "invalid");
    assert_eq!(
        row.error.as_deref(),
        Some("project.yaml:2:3: projects: at most 100 entries")
    );
    assert_eq!(row.synced_sha.as_deref(), Some("aaaaaaa1"));
    assert_eq!(entries(&f.pool).await, before, "entries kept as they were");
}

#[tokio::test]
async fn a_long_error_should_be_stored_cut_at_a_line_boundary() {
    let f = fixture().await;
    let before = synced(&f).await;
    // 100 problems of about 540 bytes each: some 54 KiB of text.
    let yaml = projects(MAX_PROJECTS, Some(&"x".repeat(600)));
    let full = match project::parse("project.yaml", yaml.as_bytes()) {
        Err(problems) => problems.to_string(),
        Ok(_) => panic!("a lifecycle of 600 x is refused"),
    };
    assert!(full.len() > 3 * MAX_ERROR_BYTES, "{} bytes", full.len());

    let outcome = f
        .handler
        .apply(&RepoId(1), Ok(found("bbbbbbb2", &yaml)))
        .await;
    assert_eq!(outcome, Ok("invalid"));
    let stored = row(&f.pool).await;
    let error = stored.error.clone().expect("error");
    assert!(error.len() <= MAX_ERROR_BYTES, "{} bytes", error.len());
    let (kept, mark) = error.rsplit_once('\n').expect("more than one line");
    assert_eq!(mark, "…");
    // Whole lines of the full text, as many as fit.
    assert!(full.starts_with(&format!("{kept}\n")), "cut inside a line");
    let next_line = full[kept.len() + 1..].lines().next().unwrap_or_default();
    assert!(kept.len() + 1 + next_line.len() + "\n…".len() > MAX_ERROR_BYTES);
    assert_eq!(entries(&f.pool).await, before);

    // The event repeats the start of it, within its own bound.
    let newest = &events(&f.pool).await[0];
    assert_eq!(newest.kind, "invalid");
    assert!(newest.message.len() <= MAX_EVENT_BYTES);
    assert!(
        newest
            .message
            .starts_with("invalid bbbbbbb: project.yaml:4:16: projects[0].lifecycle: "),
        "{}",
        newest.message
    );
    assert!(newest.message.ends_with("\n…"), "{}", newest.message);

    // The same file again: nothing changed as stored, so `updated_at` stays.
    f.handler
        .apply(&RepoId(1), Ok(found("bbbbbbb2", &yaml)))
        .await
        .ok();
    assert_eq!(row(&f.pool).await, stored);
}

#[tokio::test]
async fn a_repeated_reconcile_should_count_in_the_newest_event_instead_of_adding_one() {
    let f = fixture().await;
    let before = synced(&f).await;
    let broken = projects(MAX_PROJECTS + 1, None);
    for _ in 0..50 {
        f.handler
            .apply(&RepoId(1), Ok(found("bbbbbbb2", &broken)))
            .await
            .ok();
    }
    let found_events = events(&f.pool).await;
    let summary: Vec<(&str, i64)> = found_events
        .iter()
        .map(|e| (e.kind.as_str(), e.count))
        .collect();
    assert_eq!(summary, [("invalid", 50), ("synced", 1)]);
    assert!(found_events[0].at >= found_events[1].at);
    let first_at = found_events[0].at;
    assert_eq!(entries(&f.pool).await, before);

    // One more: the time moves, the count grows.
    f.handler
        .apply(&RepoId(1), Ok(found("bbbbbbb2", &broken)))
        .await
        .ok();
    let newest = &events(&f.pool).await[0];
    assert_eq!(newest.count, 51);
    assert!(newest.at > first_at, "{} > {first_at}", newest.at);

    // The API shows the count.
    let detail = get_repo(&f.pool, "acme", "mono")
        .await
        .expect("query")
        .expect("repo");
    let json = serde_json::to_value(roster::web::json::RepoDetailJson::from(detail)).expect("json");
    assert_eq!(json["events"][0]["count"], 51);
    assert_eq!(json["events"][1]["count"], 1);

    // Something else happens: a new event; then the old message again is
    // new too (it is no longer the newest).
    f.handler
        .apply(&RepoId(1), Err(Failure::scripted("GitHub answered 502")))
        .await
        .ok();
    f.handler
        .apply(&RepoId(1), Err(Failure::scripted("GitHub answered 502")))
        .await
        .ok();
    f.handler
        .apply(&RepoId(1), Ok(found("bbbbbbb2", &broken)))
        .await
        .ok();
    let summary: Vec<(String, i64)> = events(&f.pool)
        .await
        .into_iter()
        .map(|e| (e.kind, e.count))
        .collect();
    assert_eq!(
        summary,
        [
            ("invalid".to_string(), 1),
            ("error".to_string(), 2),
            ("invalid".to_string(), 51),
            ("synced".to_string(), 1),
        ]
    );
}

#[tokio::test]
async fn the_same_problems_at_a_new_commit_should_be_a_new_event() {
    let f = fixture().await;
    synced(&f).await;
    let broken = projects(MAX_PROJECTS + 1, None);
    for sha in ["bbbbbbb2", "ccccccc3"] {
        f.handler
            .apply(&RepoId(1), Ok(found(sha, &broken)))
            .await
            .ok();
    }
    let counts: Vec<i64> = events(&f.pool).await.iter().map(|e| e.count).collect();
    assert_eq!(counts, [1, 1, 1]);
}

#[tokio::test]
async fn the_repository_list_should_show_only_the_first_line_of_an_error() {
    let f = fixture().await;
    synced(&f).await;
    let yaml = "projects:\n  - name: Bad\n    owner: \"\"\n";
    f.handler
        .apply(&RepoId(1), Ok(found("bbbbbbb2", yaml)))
        .await
        .ok();
    let page = list_repos(&f.pool, &RepoFilter::default())
        .await
        .expect("list");
    assert_eq!(
        page.items[0].error.as_deref(),
        Some("project.yaml:2:11: projects[0].name: must contain only lowercase letters, digits and '-', found \"Bad\"")
    );
    let detail = get_repo(&f.pool, "acme", "mono")
        .await
        .expect("query")
        .expect("repo");
    let error = detail.repo.error.unwrap_or_default();
    assert_eq!(error.lines().count(), 2, "{error}");
    assert!(error.ends_with("project.yaml:3:12: projects[0].owner: must not be empty"));
}
