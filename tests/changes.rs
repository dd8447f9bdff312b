//! The change log against a real PostgreSQL: what a reconcile records, that
//! a reconcile changing nothing records nothing, that concurrent writers on
//! two pools (two replicas) never show a reader a gap or a reordering, and
//! retention.

use crate::support::registry::{handler, installed_repo, queue};
use std::sync::Arc;
use std::time::Duration;

use roster::controller::{Enqueue, Handler, Trigger, WorkQueue};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::registry::changes::prune::prune_once;
use roster::registry::changes::{
    changes_after, history, oldest_kept, recently_removed, ChangeKind, FeedError,
};
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

fn info(name: &str) -> RepoInfo {
    installed_repo("acme", name, 7)
}

fn found(name: &str, sha: &str, yaml: &str) -> Observed {
    Observed::Present {
        repo: info(name),
        file: FileState::Found {
            sha: sha.to_string(),
            bytes: yaml.as_bytes().to_vec(),
        },
    }
}

fn gone(name: &str) -> Observed {
    Observed::Removed {
        repo: Some(info(name)),
        reason: "repository deleted".to_string(),
    }
}

fn projects(owner: &str, names: &[&str]) -> String {
    let mut yaml = String::from("projects:\n");
    for name in names {
        yaml.push_str(&format!("  - name: {name}\n    owner: {owner}\n"));
    }
    yaml
}

async fn setup() -> (PgPool, String, Arc<PgQueue>, RegistryHandler) {
    let (pool, url) = fresh_database().await.expect("fresh database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue.clone());
    (pool, url, queue, handler)
}

async fn apply(handler: &RegistryHandler, id: i64, observed: Observed) {
    handler
        .apply(&RepoId(id), Ok(observed))
        .await
        .expect("reconcile");
}

#[tokio::test]
async fn a_reconcile_should_log_each_created_changed_and_removed_entry() {
    let (pool, _, _, handler) = setup().await;
    apply(
        &handler,
        1,
        found("app", "sha1", &projects("team-a", &["api", "web"])),
    )
    .await;
    let yaml = "projects:\n  - name: api\n    owner: team-b\n  - name: worker\n    owner: team-a\n";
    apply(&handler, 1, found("app", "sha2", yaml)).await;

    let feed = changes_after(&pool, 0, 100).await.expect("feed");
    let seen: Vec<(i64, ChangeKind, &str, Option<&str>, &str)> = feed
        .items
        .iter()
        .map(|c| {
            (
                c.seq,
                c.kind,
                c.name.as_str(),
                c.sha.as_deref(),
                c.cause.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, ChangeKind::Created, "api", Some("sha1"), "reconcile"),
            (2, ChangeKind::Created, "web", Some("sha1"), "reconcile"),
            (3, ChangeKind::Changed, "api", Some("sha2"), "reconcile"),
            (4, ChangeKind::Removed, "web", Some("sha2"), "reconcile"),
            (5, ChangeKind::Created, "worker", Some("sha2"), "reconcile"),
        ]
    );
    assert_eq!(feed.next_cursor, 5);
    let changed = &feed.items[2];
    assert_eq!(
        changed.before.as_ref().expect("before").fields.owner,
        "team-a"
    );
    assert_eq!(
        changed.after.as_ref().expect("after").fields.owner,
        "team-b"
    );
    assert_eq!(changed.repo, "acme/app");
    assert_eq!(changed.repo_id, RepoId(1));
    let removed = &feed.items[3];
    assert_eq!(removed.before.as_ref().expect("last version").name, "web");
    assert!(removed.after.is_none());
}

#[tokio::test]
async fn a_reconcile_that_changes_nothing_should_write_nothing() {
    let (pool, _, _, handler) = setup().await;
    let yaml = projects("team-a", &["api"]);
    apply(&handler, 1, found("app", "sha1", &yaml)).await;
    // The same file again, at another commit; then a broken file, which
    // keeps the entries as they were.
    apply(&handler, 1, found("app", "sha2", &yaml)).await;
    apply(&handler, 1, found("app", "sha3", "projects: [")).await;
    let feed = changes_after(&pool, 0, 100).await.expect("feed");
    assert_eq!(feed.items.len(), 1, "{:?}", feed.items);
    let head: i64 = sqlx::query_scalar("select seq from change_head")
        .fetch_one(&pool)
        .await
        .expect("head");
    assert_eq!(head, 1);
}

#[tokio::test]
async fn a_deleted_repository_should_show_its_entries_as_removed_with_their_last_version() {
    let (pool, _, _, handler) = setup().await;
    apply(
        &handler,
        1,
        found("app", "sha1", &projects("team-a", &["api", "web"])),
    )
    .await;
    apply(&handler, 1, gone("app")).await;

    let feed = changes_after(&pool, 2, 100).await.expect("feed");
    assert_eq!(feed.items.len(), 2);
    for change in &feed.items {
        assert_eq!(change.kind, ChangeKind::Removed);
        assert_eq!(change.cause, "repo_removed");
        assert_eq!(change.sha, None);
        assert_eq!(
            change.before.as_ref().expect("before").fields.owner,
            "team-a"
        );
        assert_eq!(change.before.as_ref().expect("before").source_sha, "sha1");
    }
    let removed = recently_removed(&pool, 10).await.expect("removed");
    let names: Vec<&str> = removed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["web", "api"]);

    // History outlives the entry, newest first.
    let api = history(&pool, "api", None, 10).await.expect("history");
    let kinds: Vec<ChangeKind> = api.items.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, vec![ChangeKind::Removed, ChangeKind::Created]);

    // A name that comes back is no longer "recently removed".
    apply(
        &handler,
        2,
        found("other", "sha9", &projects("team-c", &["api"])),
    )
    .await;
    let removed = recently_removed(&pool, 10).await.expect("removed");
    let names: Vec<&str> = removed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["web"]);
}

#[tokio::test]
async fn a_reconcile_claimed_with_a_listing_prefetch_should_say_listing() {
    let (pool, _, queue, handler) = setup().await;
    queue
        .enqueue(vec![Enqueue {
            key: RepoId(1),
            hint: Some(b"prefetched".to_vec()),
            trigger: Trigger::Listing,
        }])
        .await
        .expect("enqueue");
    let claim = queue.claim("test").await.expect("claim").expect("an id");
    assert!(claim.hint.is_some());
    let state = Ok(found("app", "sha1", &projects("team-a", &["api"])));
    handler.apply_claimed(&claim, state).await.expect("apply");
    let feed = changes_after(&pool, 0, 10).await.expect("feed");
    assert_eq!(feed.items[0].cause, "listing");
}

#[tokio::test]
async fn concurrent_reconciles_on_two_pools_should_show_every_seq_once_in_order() {
    let (pool_a, url, queue_a, handler_a) = setup().await;
    let pool_b = roster::db::connect_and_migrate(&url)
        .await
        .expect("second pool");
    let queue_b = queue(&pool_b);
    let handler_b = Arc::new(handler(&pool_b, queue_b));
    let handler_a = Arc::new(handler_a);
    let _ = queue_a;

    const REPOS: i64 = 16;
    const ROUNDS: usize = 12;
    let writers = (0..REPOS).map(|repo| {
        let handler = if repo % 2 == 0 {
            handler_a.clone()
        } else {
            handler_b.clone()
        };
        tokio::spawn(async move {
            for round in 0..ROUNDS {
                // Each round changes the owner of two entries: two changes
                // per round, the first round two creations.
                let owner = format!("team-{round}");
                let names = [format!("r{repo}-a"), format!("r{repo}-b")];
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let observed = found(
                    &format!("repo{repo}"),
                    &format!("s{round}"),
                    &projects(&owner, &names),
                );
                handler
                    .apply(&RepoId(repo + 1), Ok(observed))
                    .await
                    .expect("reconcile");
            }
        })
    });
    let writers: Vec<_> = writers.collect();
    let expected = REPOS * ROUNDS as i64 * 2;

    // The consumer reads while the writers write, alternating pools.
    let mut cursor = 0;
    let mut reads = 0;
    while cursor < expected {
        let pool = if reads % 2 == 0 { &pool_a } else { &pool_b };
        reads += 1;
        let feed = changes_after(pool, cursor, 7).await.expect("feed");
        for change in &feed.items {
            assert_eq!(
                change.seq,
                cursor + 1,
                "a gap or a reordering after {cursor}"
            );
            cursor = change.seq;
        }
        assert_eq!(feed.next_cursor, cursor);
        if feed.items.is_empty() {
            tokio::task::yield_now().await;
        }
    }
    for writer in writers {
        writer.await.expect("writer");
    }
    let feed = changes_after(&pool_a, cursor, 100).await.expect("feed");
    assert!(
        feed.items.is_empty(),
        "more than expected: {:?}",
        feed.items
    );
    assert_eq!(cursor, expected);
}

#[tokio::test]
async fn pruning_should_remove_the_oldest_in_batches_and_the_feed_should_answer_gone() {
    let (pool, _, _, handler) = setup().await;
    apply(
        &handler,
        1,
        found("app", "sha1", &projects("team-a", &["a", "b", "c"])),
    )
    .await;
    assert_eq!(oldest_kept(&pool).await.expect("oldest"), 1);
    // Nothing is old enough under a long retention.
    let none = prune_once(&pool, Duration::from_secs(3600), 2)
        .await
        .expect("prune");
    assert_eq!(none, 0);
    let removed = prune_once(&pool, Duration::ZERO, 2).await.expect("prune");
    assert_eq!(removed, 2);
    assert_eq!(oldest_kept(&pool).await.expect("oldest"), 3);

    match changes_after(&pool, 0, 10).await {
        Err(FeedError::Gone {
            after: 0,
            oldest: 3,
        }) => {}
        other => panic!("expected gone, got {other:?}"),
    }
    // Continuing right before the oldest kept works.
    let feed = changes_after(&pool, 2, 10).await.expect("feed");
    assert_eq!(feed.items.len(), 1);
    assert_eq!(feed.items[0].seq, 3);

    // All pruned: the next seq to come is the oldest kept.
    prune_once(&pool, Duration::ZERO, 10).await.expect("prune");
    assert_eq!(oldest_kept(&pool).await.expect("oldest"), 4);
    assert!(changes_after(&pool, 3, 10)
        .await
        .expect("feed")
        .items
        .is_empty());
    assert!(matches!(
        changes_after(&pool, 2, 10).await,
        Err(FeedError::Gone { oldest: 4, .. })
    ));
}

#[tokio::test]
async fn pruning_and_reconciles_should_never_wait_for_each_other() {
    let (pool, _, _, handler) = setup().await;
    apply(
        &handler,
        1,
        found("app", "sha1", &projects("team-a", &["a", "b"])),
    )
    .await;

    // A reconcile in the middle of its commit holds the head's lock:
    // pruning goes on regardless.
    let mut writer = pool.begin().await.expect("begin");
    sqlx::query("update change_head set seq = seq")
        .execute(&mut *writer)
        .await
        .expect("lock the head");
    let pruned = tokio::time::timeout(
        Duration::from_secs(10),
        prune_once(&pool, Duration::ZERO, 1),
    )
    .await
    .expect("pruning did not wait for the writer")
    .expect("prune");
    assert_eq!(pruned, 1);
    writer.rollback().await.expect("rollback");

    // A prune in progress (its deletions not committed yet) holds up no
    // reconcile.
    let mut pruner = pool.begin().await.expect("begin");
    sqlx::query("delete from changes where seq = 2")
        .execute(&mut *pruner)
        .await
        .expect("delete");
    tokio::time::timeout(
        Duration::from_secs(10),
        apply(
            &handler,
            1,
            found("app", "sha2", &projects("team-b", &["a", "b"])),
        ),
    )
    .await
    .expect("the reconcile did not wait for pruning");
    pruner.commit().await.expect("commit");
    let feed = changes_after(&pool, 2, 10).await.expect("feed");
    assert_eq!(
        feed.items.iter().map(|c| c.seq).collect::<Vec<_>>(),
        vec![3, 4]
    );
}

/// A change stored before entries had a path and a resolved owner (an
/// older version wrote neither) still reads, and shows in today's shape
/// with those fields at their defaults.
#[tokio::test]
async fn a_change_stored_before_later_fields_should_read_with_their_defaults() {
    let (pool, _, _, handler) = setup().await;
    apply(
        &handler,
        1,
        found("app", "sha1", &projects("team-a", &["api"])),
    )
    .await;
    apply(
        &handler,
        1,
        found("app", "sha2", &projects("team-b", &["api"])),
    )
    .await;
    let old = "after - 'path' - 'owner_status' - 'owner_team_id' - 'owner_slug'";
    let rewritten = sqlx::query(&format!("update changes set after = {old}"))
        .execute(&pool)
        .await
        .expect("rewrite as an older version stored it");
    assert_eq!(rewritten.rows_affected(), 2);

    let feed = changes_after(&pool, 0, 100).await.expect("old rows read");
    assert_eq!(feed.items.len(), 2);
    let changed = &feed.items[1];
    assert_eq!(changed.kind, ChangeKind::Changed);
    assert_eq!(
        changed.before.as_ref().expect("before").fields.owner,
        "team-a"
    );
    let after = changed.after.as_ref().expect("after");
    assert_eq!(
        (after.fields.owner.as_str(), after.path.as_str()),
        ("team-b", "project.yaml")
    );

    let shown =
        serde_json::to_value(roster::web::json::ChangeJson::from(changed.clone())).expect("json");
    for version in ["before", "after"] {
        assert_eq!(shown[version]["path"], "project.yaml", "{shown}");
        assert_eq!(shown[version]["owner_status"], "unchecked", "{shown}");
        assert!(shown[version]["owner_slug"].is_null(), "{shown}");
    }
    assert_eq!(shown["kind"], "changed");
}
