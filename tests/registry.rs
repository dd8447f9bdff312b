//! The registry against a real PostgreSQL: every status transition of
//! docs/contract.md#repository-statuses with its entries, conflicts, idempotency, and the read queries.

use crate::support::registry::{github_repo, handler, queue, repo_info};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use roster::controller::{Failure, Handler, Tracker, WorkQueue};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::registry::{
    ensure_known, get_project, get_repo, list_projects, list_repos, mark_error,
    repo_id_by_full_name, status_counts, ProjectFilter, RegistryError, RegistryHandler,
    RegistryTracker, RepoFilter, Status,
};
use roster::source::{FileState, InstallationId, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

/// The name a listing gives the partition of `installation` (`None`: the
/// local folder).
fn partition(installation: Option<i64>) -> roster::source::Partition {
    roster::source::Partition::of(installation.map(InstallationId))
}

struct Fixture {
    pool: PgPool,
    queue: Arc<PgQueue>,
    handler: RegistryHandler,
}

/// A handler on a fresh, migrated database of its own, with the real queue.
async fn fixture() -> Fixture {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue.clone());
    Fixture {
        pool,
        queue,
        handler,
    }
}

/// Every repository id waiting in the queue, taken out of it.
async fn drain(queue: &PgQueue) -> Vec<RepoId> {
    let mut keys = Vec::new();
    while let Some(claim) = queue.claim("test").await.expect("claim") {
        keys.push(claim.key);
        queue.done(&claim).await.expect("done");
    }
    keys.sort();
    keys
}

fn info(owner: &str, name: &str) -> RepoInfo {
    github_repo(owner, name, 7)
}

fn found(repo: RepoInfo, sha: &str, yaml: &str) -> Observed {
    Observed::Present {
        repo,
        file: FileState::Found {
            sha: sha.to_string(),
            bytes: yaml.as_bytes().to_vec(),
        },
    }
}

const TWO_PROJECTS: &str = "projects:
  - name: checkout-api
    owner: team-payments
    description: Takes payments at checkout
    lifecycle: production
    tags: [payments, grpc]
    links:
      - title: Runbook
        url: https://runbooks.example.com/checkout
    labels:
      tier: \"1\"
  - name: checkout-worker
    owner: team-payments
";

#[derive(Debug, Clone, PartialEq)]
struct RepoRow {
    owner: String,
    name: String,
    status: String,
    synced_sha: Option<String>,
    last_synced_at: Option<DateTime<Utc>>,
    error: Option<String>,
    attempts: i32,
    conflicts: Vec<String>,
    updated_at: DateTime<Utc>,
}

roster::from_row!(RepoRow {
    owner,
    name,
    status,
    synced_sha,
    last_synced_at,
    error,
    attempts,
    conflicts,
    updated_at
});

async fn repo_row(pool: &PgPool, id: i64) -> Option<RepoRow> {
    sqlx::query_as(
        "select owner, name, status, synced_sha, last_synced_at, error, attempts, conflicts,
                updated_at
         from repositories where id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
    .expect("read repository")
}

#[derive(Debug, Clone, PartialEq)]
struct EntryRow {
    name: String,
    repo_id: i64,
    owner: String,
    description: Option<String>,
    source_sha: String,
    updated_at: DateTime<Utc>,
}

roster::from_row!(EntryRow {
    name,
    repo_id,
    owner,
    description,
    source_sha,
    updated_at
});

async fn entries(pool: &PgPool) -> Vec<EntryRow> {
    sqlx::query_as(
        "select name, repo_id, owner, description, source_sha, updated_at
         from entries order by name",
    )
    .fetch_all(pool)
    .await
    .expect("read entries")
}

async fn entry_names(pool: &PgPool, repo: i64) -> Vec<String> {
    entries(pool)
        .await
        .into_iter()
        .filter(|e| e.repo_id == repo)
        .map(|e| e.name)
        .collect()
}

async fn last_event(pool: &PgPool, repo: i64) -> (String, String) {
    sqlx::query_as("select kind, message from events where repo_id = $1 order by id desc limit 1")
        .bind(repo)
        .fetch_one(pool)
        .await
        .expect("read event")
}

#[tokio::test]
async fn synced_should_create_every_project_of_the_file() {
    let f = fixture().await;
    let outcome = f
        .handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "checkout"), "3f2a1b9c", TWO_PROJECTS)),
        )
        .await;
    assert_eq!(outcome, Ok("synced"));

    let repo = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(repo.status, "synced");
    assert_eq!(repo.synced_sha.as_deref(), Some("3f2a1b9c"));
    assert!(repo.last_synced_at.is_some());
    assert_eq!(repo.error, None);
    assert_eq!(
        entry_names(&f.pool, 1).await,
        ["checkout-api", "checkout-worker"]
    );
    assert_eq!(
        last_event(&f.pool, 1).await,
        (
            "synced".into(),
            "synced 3f2a1b9: created checkout-api, checkout-worker".into()
        )
    );

    let entry = get_project(&f.pool, "checkout-api")
        .await
        .expect("query")
        .expect("entry");
    let json = serde_json::to_value(&entry).expect("json");
    assert_eq!(json["name"], "checkout-api");
    assert_eq!(json["owner"], "team-payments");
    assert_eq!(json["description"], "Takes payments at checkout");
    assert_eq!(json["lifecycle"], "production");
    assert_eq!(json["tags"], serde_json::json!(["payments", "grpc"]));
    assert_eq!(
        json["links"],
        serde_json::json!([{"title": "Runbook", "url": "https://runbooks.example.com/checkout"}])
    );
    assert_eq!(json["labels"], serde_json::json!({"tier": "1"}));
    assert_eq!(json["repo"], "acme/checkout");
    assert_eq!(json["repo_id"], 1);
    assert_eq!(json["source_sha"], "3f2a1b9c");
    for field in ["created_at", "updated_at"] {
        let at = json[field].as_str().expect("timestamp");
        assert!(DateTime::parse_from_rfc3339(at).is_ok(), "{field}: {at}");
    }
}

#[tokio::test]
async fn an_edit_should_update_create_and_delete_only_what_changed() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let before = entries(&f.pool).await;

    let edited = "projects:
  - name: checkout-api
    owner: team-checkout
  - name: checkout-worker
    owner: team-payments
  - name: checkout-ui
    owner: team-web
";
    let outcome = f
        .handler
        .apply(&RepoId(1), Ok(found(repo.clone(), "bbbbbbb2", edited)))
        .await;
    assert_eq!(outcome, Ok("synced"));
    let after = entries(&f.pool).await;
    assert_eq!(
        after.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["checkout-api", "checkout-ui", "checkout-worker"]
    );
    let api = &after[0];
    assert_eq!(
        (api.owner.as_str(), api.description.as_deref()),
        ("team-checkout", None)
    );
    assert_eq!(api.source_sha, "bbbbbbb2");
    assert!(api.updated_at > before[0].updated_at);
    // Untouched by the edit: same row, same sha, same updated_at.
    assert_eq!(after[2], before[1]);
    assert_eq!(
        last_event(&f.pool, 1).await.1,
        "synced bbbbbbb: created checkout-ui; updated checkout-api"
    );

    let renamed = "name: checkout-api\nowner: team-checkout\n";
    f.handler
        .apply(&RepoId(1), Ok(found(repo, "ccccccc3", renamed)))
        .await
        .ok();
    assert_eq!(entry_names(&f.pool, 1).await, ["checkout-api"]);
    assert_eq!(
        last_event(&f.pool, 1).await.1,
        "synced ccccccc: deleted checkout-ui, checkout-worker"
    );
}

#[tokio::test]
async fn invalid_file_should_keep_entries_and_show_the_problems() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let before = entries(&f.pool).await;

    let outcome = f
        .handler
        .apply(
            &RepoId(1),
            Ok(found(repo, "bbbbbbb2", "name: checkout-api\nowner: \"\"\n")),
        )
        .await;
    assert_eq!(outcome, Ok("invalid"));
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(row.status, "invalid");
    let error = row.error.expect("error text");
    assert!(error.starts_with("project.yaml:2:"), "{error}");
    assert!(error.contains("owner: "), "{error}");
    // The entries still reflect the last good commit, and say so.
    assert_eq!(row.synced_sha.as_deref(), Some("aaaaaaa1"));
    assert_eq!(entries(&f.pool).await, before);
    let (kind, message) = last_event(&f.pool, 1).await;
    assert_eq!(kind, "invalid");
    assert!(
        message.starts_with("invalid bbbbbbb: project.yaml:2:"),
        "{message}"
    );
}

#[tokio::test]
async fn unreadable_file_should_keep_entries() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let before = entries(&f.pool).await;

    let unreadable = Observed::Present {
        repo,
        file: FileState::Unreadable {
            sha: Some("bbbbbbb2".into()),
            message: "project.yaml: file: larger than 256 KiB".into(),
        },
    };
    assert_eq!(
        f.handler.apply(&RepoId(1), Ok(unreadable)).await,
        Ok("invalid")
    );
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(row.status, "invalid");
    assert_eq!(
        row.error.as_deref(),
        Some("project.yaml: file: larger than 256 KiB")
    );
    assert_eq!(entries(&f.pool).await, before);
}

#[tokio::test]
async fn source_failure_should_keep_entries_and_count_attempts() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let before = entries(&f.pool).await;

    let failure = Failure::scripted("GitHub answered 502").retry_after(Duration::from_secs(30));
    for attempt in 1..=2 {
        let outcome = f.handler.apply(&RepoId(1), Err(failure.clone())).await;
        assert_eq!(outcome, Err(failure.clone()), "the controller must retry");
        let row = repo_row(&f.pool, 1).await.expect("row");
        assert_eq!(row.status, "error");
        assert_eq!(row.error.as_deref(), Some("GitHub answered 502"));
        assert_eq!(row.attempts, attempt);
        assert_eq!(row.synced_sha.as_deref(), Some("aaaaaaa1"));
    }
    assert_eq!(entries(&f.pool).await, before);
    assert_eq!(
        last_event(&f.pool, 1).await,
        ("error".into(), "error: GitHub answered 502".into())
    );

    // A success clears the error and the attempts.
    f.handler
        .apply(&RepoId(1), Ok(found(repo, "aaaaaaa1", TWO_PROJECTS)))
        .await
        .ok();
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(
        (row.status.as_str(), row.error, row.attempts),
        ("synced", None, 0)
    );
}

#[tokio::test]
async fn failure_of_an_unknown_repository_should_record_nothing() {
    let f = fixture().await;
    let failure = Failure::scripted("rate limited");
    assert_eq!(
        f.handler.apply(&RepoId(9), Err(failure.clone())).await,
        Err(failure)
    );
    assert_eq!(repo_row(&f.pool, 9).await, None);
    assert_eq!(
        mark_error(&f.pool, RepoId(9), "boom").await.ok(),
        Some(None)
    );
}

#[tokio::test]
async fn missing_file_should_delete_the_entries() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();

    let absent = Observed::Present {
        repo,
        file: FileState::Absent { sha: None },
    };
    assert_eq!(f.handler.apply(&RepoId(1), Ok(absent)).await, Ok("no_file"));
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(
        (row.status.as_str(), row.error, row.synced_sha),
        ("no_file", None, None)
    );
    assert!(entries(&f.pool).await.is_empty());
    assert_eq!(
        last_event(&f.pool, 1).await,
        (
            "no_file".into(),
            "no project.yaml; deleted checkout-api, checkout-worker".into()
        )
    );
}

#[tokio::test]
async fn removed_repository_should_delete_the_entries() {
    let f = fixture().await;
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "checkout"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();

    let gone = Observed::Removed {
        repo: None,
        reason: "repository not found".into(),
    };
    assert_eq!(f.handler.apply(&RepoId(1), Ok(gone)).await, Ok("removed"));
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(row.status, "removed");
    assert_eq!(row.error.as_deref(), Some("repository not found"));
    assert_eq!(
        (row.owner.as_str(), row.name.as_str()),
        ("acme", "checkout")
    );
    assert!(entries(&f.pool).await.is_empty());

    // An archived repository never seen before is recorded as removed.
    let archived = Observed::Removed {
        repo: Some(info("acme", "old")),
        reason: "archived".into(),
    };
    assert_eq!(
        f.handler.apply(&RepoId(2), Ok(archived)).await,
        Ok("removed")
    );
    let row = repo_row(&f.pool, 2).await.expect("row");
    assert_eq!(
        (row.status.as_str(), row.error.as_deref()),
        ("removed", Some("archived"))
    );

    // An unknown repository that is gone leaves no trace.
    let unknown = Observed::Removed {
        repo: None,
        reason: "repository not found".into(),
    };
    assert_eq!(
        f.handler.apply(&RepoId(3), Ok(unknown)).await,
        Ok("removed")
    );
    assert_eq!(repo_row(&f.pool, 3).await, None);
}

#[tokio::test]
async fn second_repository_declaring_an_owned_name_should_get_a_conflict() {
    let f = fixture().await;
    let billing = repo_info("local", "billing");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(billing, "aaaaaaa1", "name: checkout-api\nowner: a\n")),
        )
        .await
        .ok();

    let other = "projects:
  - name: checkout-api
    owner: b
  - name: billing-ui
    owner: b
";
    let outcome = f
        .handler
        .apply(
            &RepoId(2),
            Ok(found(info("acme", "web"), "bbbbbbb2", other)),
        )
        .await;
    assert_eq!(outcome, Ok("conflict"));
    let row = repo_row(&f.pool, 2).await.expect("row");
    assert_eq!(row.status, "conflict");
    assert_eq!(
        row.error.as_deref(),
        Some("name \"checkout-api\" is owned by local/billing")
    );
    assert_eq!(row.conflicts, ["checkout-api"]);
    assert_eq!(row.synced_sha.as_deref(), Some("bbbbbbb2"));
    // The owner keeps its name; the other names are applied.
    assert_eq!(entry_names(&f.pool, 1).await, ["checkout-api"]);
    assert_eq!(entry_names(&f.pool, 2).await, ["billing-ui"]);
    assert_eq!(repo_row(&f.pool, 1).await.expect("row").status, "synced");
    assert_eq!(
        last_event(&f.pool, 2).await.1,
        "conflict bbbbbbb: created billing-ui; name \"checkout-api\" is owned by local/billing"
    );
}

#[tokio::test]
async fn released_name_should_wake_the_conflicted_repository_which_then_wins() {
    let f = fixture().await;
    let one = "name: checkout-api\nowner: a\n";
    f.handler
        .apply(&RepoId(1), Ok(found(info("acme", "one"), "aaaaaaa1", one)))
        .await
        .ok();
    let two = found(
        info("acme", "two"),
        "bbbbbbb2",
        "name: checkout-api\nowner: b\n",
    );
    assert_eq!(
        f.handler.apply(&RepoId(2), Ok(two.clone())).await,
        Ok("conflict")
    );
    assert_eq!(drain(&f.queue).await, []);

    // The owner renames its project: the name is released.
    let renamed = "name: checkout-service\nowner: a\n";
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "one"), "ccccccc3", renamed)),
        )
        .await
        .ok();
    assert_eq!(drain(&f.queue).await, [RepoId(2)]);

    assert_eq!(f.handler.apply(&RepoId(2), Ok(two)).await, Ok("synced"));
    let row = repo_row(&f.pool, 2).await.expect("row");
    assert_eq!((row.error, row.conflicts), (None, Vec::<String>::new()));
    assert_eq!(entry_names(&f.pool, 2).await, ["checkout-api"]);

    // Deleting a repository's file releases its names too.
    let three = found(
        info("acme", "three"),
        "ddddddd4",
        "name: checkout-service\nowner: c\n",
    );
    assert_eq!(f.handler.apply(&RepoId(3), Ok(three)).await, Ok("conflict"));
    let absent = Observed::Present {
        repo: info("acme", "one"),
        file: FileState::Absent { sha: None },
    };
    f.handler.apply(&RepoId(1), Ok(absent)).await.ok();
    assert_eq!(drain(&f.queue).await, [RepoId(3)]);
}

#[tokio::test]
async fn two_repositories_racing_for_a_name_should_leave_exactly_one_owner() {
    for _ in 0..5 {
        let f = fixture().await;
        let a = found(info("acme", "a"), "aaaaaaa1", "name: shared\nowner: a\n");
        let b = found(info("acme", "b"), "bbbbbbb2", "name: shared\nowner: b\n");
        let (ra, rb) = tokio::join!(
            f.handler.apply(&RepoId(1), Ok(a)),
            f.handler.apply(&RepoId(2), Ok(b))
        );
        let mut outcomes = [ra.expect("a"), rb.expect("b")];
        outcomes.sort();
        assert_eq!(outcomes, ["conflict", "synced"]);
        assert_eq!(entries(&f.pool).await.len(), 1);
    }
}

#[tokio::test]
async fn same_state_twice_should_change_nothing_the_second_time() {
    let f = fixture().await;
    let pool = &f.pool;
    // Repository 1 owns a name that repository 2 also wants, so both the
    // synced and the conflict paths are exercised.
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(
                info("acme", "one"),
                "aaaaaaa1",
                "name: taken\nowner: a\n",
            )),
        )
        .await
        .ok();
    let two = found(
        info("acme", "two"),
        "bbbbbbb2",
        &format!("{TWO_PROJECTS}  - name: taken\n    owner: b\n"),
    );
    let invalid = found(info("acme", "three"), "ccccccc3", "nme: typo\n");
    let states = [(RepoId(2), two), (RepoId(3), invalid)];
    for (id, state) in &states {
        f.handler.apply(id, Ok(state.clone())).await.ok();
    }
    let entries_before = entries(pool).await;
    let repos_before = [repo_row(pool, 2).await, repo_row(pool, 3).await];

    for (id, state) in &states {
        f.handler.apply(id, Ok(state.clone())).await.ok();
    }
    assert_eq!(entries(pool).await, entries_before);
    let repos_after = [repo_row(pool, 2).await, repo_row(pool, 3).await];
    for (before, after) in repos_before.into_iter().zip(repos_after) {
        let (before, after) = (before.expect("row"), after.expect("row"));
        assert_eq!(
            RepoRow {
                last_synced_at: None,
                ..after
            },
            RepoRow {
                last_synced_at: None,
                ..before
            }
        );
    }
    assert_eq!(repo_row(pool, 2).await.expect("row").status, "conflict");
    assert_eq!(
        last_event(pool, 2).await.1,
        "conflict bbbbbbb: name \"taken\" is owned by acme/one"
    );
    assert_eq!(drain(&f.queue).await, []);
}

#[tokio::test]
async fn rename_should_keep_the_same_repository_and_its_entries() {
    let f = fixture().await;
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "checkout"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let before = entries(&f.pool).await;

    let renamed = info("acme-payments", "checkout-service");
    f.handler
        .apply(&RepoId(1), Ok(found(renamed, "aaaaaaa1", TWO_PROJECTS)))
        .await
        .ok();
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(
        (row.owner.as_str(), row.name.as_str()),
        ("acme-payments", "checkout-service")
    );
    assert_eq!(entries(&f.pool).await, before);
    let entry = get_project(&f.pool, "checkout-api")
        .await
        .expect("query")
        .expect("entry");
    assert_eq!(entry.repo, "acme-payments/checkout-service");
    assert_eq!(
        repo_id_by_full_name(&f.pool, "ACME-payments", "Checkout-Service")
            .await
            .expect("query"),
        Some(RepoId(1))
    );
    assert_eq!(
        repo_id_by_full_name(&f.pool, "acme", "checkout")
            .await
            .expect("query"),
        None
    );
}

#[tokio::test]
async fn a_name_shared_after_a_rename_should_resolve_to_the_newest_repository() {
    let f = fixture().await;
    ensure_known(&f.pool, &[(RepoId(1), info("acme", "api"))])
        .await
        .expect("known");
    // Repository 1 was renamed on GitHub (not seen yet) and a new "acme/api" exists.
    f.handler
        .apply(
            &RepoId(2),
            Ok(Observed::Present {
                repo: info("acme", "api"),
                file: FileState::Absent { sha: None },
            }),
        )
        .await
        .ok();
    assert_eq!(
        repo_id_by_full_name(&f.pool, "acme", "api")
            .await
            .expect("query"),
        Some(RepoId(2))
    );
}

#[tokio::test]
async fn ensure_known_should_add_pending_repositories_and_follow_renames() {
    let f = fixture().await;
    ensure_known(
        &f.pool,
        &[
            (RepoId(1), info("acme", "a")),
            (RepoId(2), info("acme", "b")),
        ],
    )
    .await
    .expect("known");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "a"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let synced = repo_row(&f.pool, 1).await.expect("row");

    // Known again: status kept, names updated, unchanged rows untouched.
    ensure_known(
        &f.pool,
        &[
            (RepoId(1), info("acme", "a")),
            (RepoId(2), info("acme", "b2")),
        ],
    )
    .await
    .expect("known");
    assert_eq!(repo_row(&f.pool, 1).await, Some(synced));
    let row = repo_row(&f.pool, 2).await.expect("row");
    assert_eq!((row.status.as_str(), row.name.as_str()), ("pending", "b2"));
    ensure_known(&f.pool, &[]).await.expect("nothing to do");
}

#[tokio::test]
async fn events_should_keep_the_newest_hundred() {
    let f = fixture().await;
    let repo = info("acme", "a");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    // Each failure says something new, so none is folded into the last.
    for n in 0..105 {
        f.handler
            .apply(&RepoId(1), Err(Failure::scripted(format!("down {n}"))))
            .await
            .ok();
    }
    let count: i64 = sqlx::query_scalar("select count(*) from events where repo_id = 1")
        .fetch_one(&f.pool)
        .await
        .expect("count");
    assert_eq!(count, 100);
    let detail = get_repo(&f.pool, "acme", "a")
        .await
        .expect("query")
        .expect("repo");
    assert_eq!(detail.events.len(), 50);
    assert_eq!(detail.repo.attempts, 105);
}

#[tokio::test]
async fn repository_detail_should_show_entries_and_events_newest_first() {
    let f = fixture().await;
    let repo = info("acme", "checkout");
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(repo.clone(), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    f.handler
        .apply(&RepoId(1), Ok(found(repo, "bbbbbbb2", "oops: [\n")))
        .await
        .ok();

    let detail = get_repo(&f.pool, "Acme", "CHECKOUT")
        .await
        .expect("query")
        .expect("repo");
    let json = serde_json::to_value(roster::web::json::RepoDetailJson::from(detail.clone()))
        .expect("json");
    assert_eq!(json["id"], 1);
    assert_eq!(json["full_name"], "acme/checkout");
    assert_eq!(json["status"], "invalid");
    assert_eq!(json["synced_sha"], "aaaaaaa1");
    assert_eq!(json["attempts"], 0);
    assert_eq!(
        json["projects"],
        serde_json::json!(["checkout-api", "checkout-worker"])
    );
    assert!(json["hold"].is_null());
    assert!(json["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("project.yaml:")));
    let at = json["last_synced_at"].as_str().expect("timestamp");
    assert!(DateTime::parse_from_rfc3339(at).is_ok(), "{at}");
    let kinds: Vec<&str> = detail.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["invalid", "synced"]);
    assert!(json["events"][0]["at"].is_string());
    let names: Vec<&str> = detail.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["checkout-api", "checkout-worker"]);

    assert_eq!(
        get_repo(&f.pool, "acme", "nope").await.expect("query"),
        None
    );
}

#[tokio::test]
async fn list_repos_should_page_through_every_repository_without_gaps() {
    let f = fixture().await;
    let repos: Vec<(RepoId, RepoInfo)> = (0..250)
        .map(|i| {
            (
                RepoId(1000 - i),
                info(
                    if i % 2 == 0 { "acme" } else { "beta" },
                    &format!("repo-{i:03}"),
                ),
            )
        })
        .collect();
    ensure_known(&f.pool, &repos).await.expect("known");

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let filter = RepoFilter {
            limit: 100,
            cursor: cursor.clone(),
            ..RepoFilter::default()
        };
        let page = list_repos(&f.pool, &filter).await.expect("page");
        pages += 1;
        seen.extend(page.items.iter().map(|r| r.full_name.clone()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 250);
    let mut expected: Vec<String> = repos.iter().map(|(_, r)| r.full_name()).collect();
    expected.sort();
    assert_eq!(
        seen, expected,
        "ordered by owner and name, no duplicates, no gaps"
    );
}

#[tokio::test]
async fn list_repos_should_filter_by_status_and_name() {
    let f = fixture().await;
    ensure_known(
        &f.pool,
        &[
            (RepoId(1), info("acme", "Checkout")),
            (RepoId(3), info("acme", "web")),
        ],
    )
    .await
    .expect("known");
    f.handler
        .apply(
            &RepoId(2),
            Ok(found(info("acme", "checkout-ui"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();

    let names = |page: roster::registry::Page<roster::registry::Repo>| {
        page.items
            .into_iter()
            .map(|r| r.full_name)
            .collect::<Vec<_>>()
    };
    let by_name = RepoFilter {
        q: Some("ME/CHECK".into()),
        ..RepoFilter::default()
    };
    assert_eq!(
        names(list_repos(&f.pool, &by_name).await.expect("list")),
        ["acme/Checkout", "acme/checkout-ui"]
    );
    let by_status = RepoFilter {
        status: Some(Status::Pending),
        ..RepoFilter::default()
    };
    assert_eq!(
        names(list_repos(&f.pool, &by_status).await.expect("list")),
        ["acme/Checkout", "acme/web"]
    );
    let both = RepoFilter {
        status: Some(Status::Synced),
        q: Some("check".into()),
        ..RepoFilter::default()
    };
    let page = list_repos(&f.pool, &both).await.expect("list");
    assert_eq!(page.next_cursor, None);
    assert_eq!(page.items[0].projects, ["checkout-api", "checkout-worker"]);
    assert_eq!(names(page), ["acme/checkout-ui"]);
    // Wildcards are plain characters.
    let wildcard = RepoFilter {
        q: Some("%".into()),
        ..RepoFilter::default()
    };
    assert!(list_repos(&f.pool, &wildcard)
        .await
        .expect("list")
        .items
        .is_empty());
}

#[tokio::test]
async fn bad_cursor_should_be_rejected() {
    let f = fixture().await;
    for bad in ["not a cursor", "eyJ4IjoxfQ"] {
        let repos = RepoFilter {
            cursor: Some(bad.into()),
            ..RepoFilter::default()
        };
        assert!(matches!(
            list_repos(&f.pool, &repos).await,
            Err(RegistryError::BadCursor)
        ));
        let projects = ProjectFilter {
            cursor: Some(bad.into()),
            ..ProjectFilter::default()
        };
        assert!(matches!(
            list_projects(&f.pool, &projects).await,
            Err(RegistryError::BadCursor)
        ));
    }
}

#[tokio::test]
async fn list_projects_should_filter_and_page_by_name() {
    let f = fixture().await;
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "checkout"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let many: String = (0..25)
        .map(|i| {
            format!(
                "  - name: svc-{i:02}\n    owner: team-{}\n    tags: [t{}]\n",
                i % 2,
                i % 3
            )
        })
        .collect();
    f.handler
        .apply(
            &RepoId(2),
            Ok(found(
                info("acme", "mono"),
                "bbbbbbb2",
                &format!("projects:\n{many}"),
            )),
        )
        .await
        .ok();

    let names = |page: &roster::registry::Page<roster::registry::Entry>| {
        page.items
            .iter()
            .map(|e| e.name.clone())
            .collect::<Vec<_>>()
    };
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let filter = ProjectFilter {
            limit: 10,
            cursor,
            ..ProjectFilter::default()
        };
        let page = list_projects(&f.pool, &filter).await.expect("page");
        all.extend(names(&page));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(all.len(), 27);
    assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 27);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "ordered by name");

    let by_owner = ProjectFilter {
        owner: Some("team-payments".into()),
        ..ProjectFilter::default()
    };
    assert_eq!(
        names(&list_projects(&f.pool, &by_owner).await.expect("list")),
        ["checkout-api", "checkout-worker"]
    );
    let by_tag = ProjectFilter {
        tag: Some("grpc".into()),
        ..ProjectFilter::default()
    };
    assert_eq!(
        names(&list_projects(&f.pool, &by_tag).await.expect("list")),
        ["checkout-api"]
    );
    let by_tag_and_owner = ProjectFilter {
        tag: Some("t0".into()),
        owner: Some("team-1".into()),
        ..ProjectFilter::default()
    };
    assert_eq!(
        names(
            &list_projects(&f.pool, &by_tag_and_owner)
                .await
                .expect("list")
        ),
        ["svc-03", "svc-09", "svc-15", "svc-21"]
    );
    let by_text = ProjectFilter {
        q: Some("PAYMENTS AT".into()),
        ..ProjectFilter::default()
    };
    assert_eq!(
        names(&list_projects(&f.pool, &by_text).await.expect("list")),
        ["checkout-api"]
    );
    assert_eq!(get_project(&f.pool, "nope").await.expect("query"), None);
}

#[tokio::test]
async fn status_counts_should_list_every_status_with_zeros() {
    let f = fixture().await;
    ensure_known(
        &f.pool,
        &[
            (RepoId(1), info("acme", "a")),
            (RepoId(2), info("acme", "b")),
        ],
    )
    .await
    .expect("known");
    f.handler
        .apply(
            &RepoId(3),
            Ok(found(info("acme", "c"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    let counts = status_counts(&f.pool).await.expect("counts");
    assert_eq!(counts.len(), 7);
    assert_eq!(counts["pending"], 2);
    assert_eq!(counts["synced"], 1);
    for status in ["no_file", "invalid", "conflict", "error", "removed"] {
        assert_eq!(counts[status], 0, "{status}");
    }
}

#[tokio::test]
async fn tracker_should_list_each_partition_without_removed_repositories() {
    let f = fixture().await;
    let local = |name: &str| repo_info("local", name);
    let other = github_repo("beta", "x", 8);
    ensure_known(
        &f.pool,
        &[
            (RepoId(1), info("acme", "a")),
            (RepoId(2), info("acme", "b")),
            (RepoId(3), local("one")),
            (RepoId(4), other),
        ],
    )
    .await
    .expect("known");
    let gone = Observed::Removed {
        repo: None,
        reason: "not found".into(),
    };
    f.handler.apply(&RepoId(2), Ok(gone)).await.ok();

    let tracker = RegistryTracker::new(f.pool.clone());
    assert_eq!(
        tracker.tracked(&partition(Some(7))).await,
        Ok(vec![RepoId(1)])
    );
    assert_eq!(
        tracker.tracked(&partition(Some(8))).await,
        Ok(vec![RepoId(4)])
    );
    assert_eq!(tracker.tracked(&partition(None)).await, Ok(vec![RepoId(3)]));
    assert_eq!(tracker.tracked(&partition(Some(9))).await, Ok(vec![]));
}

#[tokio::test]
async fn a_reconcile_should_not_leave_its_connection_skipping_the_disk_wait() {
    let (_pool, url) = fresh_database().await.expect("fresh database");
    // One connection, so the check below runs on the reconcile's own.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("a connection");
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    let outcome = handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "a"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await;
    assert_eq!(outcome, Ok("synced"));
    let setting: String = sqlx::query_scalar("show synchronous_commit")
        .fetch_one(&pool)
        .await
        .expect("show");
    assert_eq!(setting, "on", "only the reconcile's transaction skipped it");
}

#[tokio::test]
async fn a_recorded_failure_should_name_the_repository_for_the_logs() {
    let f = fixture().await;
    f.handler
        .apply(
            &RepoId(1),
            Ok(found(info("acme", "a"), "aaaaaaa1", TWO_PROJECTS)),
        )
        .await
        .ok();
    assert_eq!(
        mark_error(&f.pool, RepoId(1), "GitHub answered 502")
            .await
            .ok(),
        Some(Some("acme/a".to_owned()))
    );
    let row = repo_row(&f.pool, 1).await.expect("row");
    assert_eq!(row.status, "error");
}
