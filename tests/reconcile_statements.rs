//! What one reconcile costs the database, counted on the wire: each
//! statement a file's reconcile sends goes through a proxy that counts
//! them (docs/performance.md, "GitHub: the full sync beside the listing").
//! An App's installation reconciles every repository with a project file
//! this way, so each round trip here is paid thousands of times.

use crate::support;
use support::registry::{handler, installed_repo, queue};
use support::statement_count::StatementCount;

use roster::controller::{Claim, Enqueue, Failure, Handler, Trigger, WorkQueue};
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};

/// Applies `yaml` at `sha` as `acme/{name}` (id `id`); the statements it took.
async fn cost(
    handler: &RegistryHandler,
    proxy: &StatementCount,
    id: i64,
    sha: char,
    yaml: &str,
) -> u64 {
    let observed = Observed::Present {
        repo: installed_repo("acme", format!("svc-{id}"), 1),
        file: FileState::Found {
            sha: sha.to_string().repeat(40),
            bytes: yaml.as_bytes().to_vec(),
        },
    };
    let before = proxy.statements();
    let outcome = handler.apply(&RepoId(id), Ok(observed)).await;
    assert_eq!(outcome.ok(), Some("synced"), "svc-{id} at {sha}");
    proxy.statements() - before
}

#[tokio::test]
async fn a_new_repositorys_first_file_should_cost_eleven_statements() {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let proxy = StatementCount::start(&url).await;
    let counted = proxy.pool().await;
    // As the server runs it for an App: the default branch's check
    // previewed with every reconcile.
    let handler = handler(&counted, queue(&pool)).with_default_branch_checks(true);
    let file = |id: i64, description: &str| {
        format!("name: svc-{id}\nowner: team-a\ndescription: {description}\n")
    };
    // A connection's first use of a statement reads the server's catalog
    // once: the first repository takes that, uncounted.
    cost(&handler, &proxy, 1, '1', &file(1, "one")).await;
    let created = cost(&handler, &proxy, 2, '1', &file(2, "one")).await;
    let updated = cost(&handler, &proxy, 2, '2', &file(2, "two")).await;
    let unchanged = cost(&handler, &proxy, 2, '3', &file(2, "two")).await;
    println!("statements: created {created}, updated {updated}, unchanged {unchanged}");
    // The one-statement try (`unchanged.rs`), then BEGIN, the lock, the
    // insert that makes it known, who owns its name, its owner, the
    // entry, the entries after, its state with its event, the change
    // with the claim's check, COMMIT: 17 before the first sight of a
    // repository was told apart.
    assert!(created <= 11, "a first file: {created}");
    // A changed file previews its check against the entries, stores it
    // and reads the owners twice (the check's notes, the entries').
    assert!(updated <= 17, "an update: {updated}");
    assert!(unchanged <= 9, "a new commit, the same file: {unchanged}");
}

/// `ids` as a listing enqueues them.
fn listed(ids: &[RepoId]) -> Vec<Enqueue<RepoId>> {
    ids.iter()
        .map(|id| Enqueue::because(*id, Trigger::Listing))
        .collect()
}

/// What a first read of each claimed repository finds: `acme/svc-ID`
/// with a project file naming `svc-ID`.
fn first_files(claims: &[Claim<RepoId>]) -> Vec<Result<Observed, Failure>> {
    claims
        .iter()
        .map(|claim| {
            let name = format!("svc-{}", claim.key.0);
            Ok(Observed::Present {
                repo: installed_repo("acme", name.clone(), 1),
                file: FileState::Found {
                    sha: "1".repeat(40),
                    bytes: format!("name: {name}\nowner: team-a\n").into_bytes(),
                },
            })
        })
        .collect()
}

/// Every reconcile that registers a project takes the change log's head
/// until its commit is on disk, so one commit per file puts the files of
/// an installation in single file at the disk's pace: a batch of new
/// files a listing handed over shares one commit instead; files a push
/// asked for keep one each.
#[tokio::test]
async fn a_batch_of_new_files_should_share_one_commit() {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let proxy = StatementCount::start(&url).await;
    let counted = proxy.pool().await;
    let queue = queue(&pool);
    let handler = handler(&counted, queue.clone()).with_default_branch_checks(true);
    let ids: Vec<RepoId> = (1..=20).map(RepoId).collect();
    queue.enqueue(listed(&ids)).await.expect("enqueued");
    let claims = queue
        .claim_many("worker", ids.len())
        .await
        .expect("claimed");
    assert_eq!(claims.len(), ids.len());
    let states = first_files(&claims);
    let before = proxy.commits();
    let applied = handler.apply_together(&claims, &states).await;
    let commits = proxy.commits() - before;
    let outcomes: Vec<_> = applied
        .iter()
        .map(|a| a.as_ref().map(|a| a.outcome))
        .collect();
    assert_eq!(outcomes, vec![Some("synced"); ids.len()]);
    assert_eq!(commits, 1, "one commit for the batch's {} files", ids.len());
    let names: Vec<String> = sqlx::query_scalar("select name from entries order by name")
        .fetch_all(&pool)
        .await
        .expect("the entries");
    assert_eq!(names.len(), ids.len());
    let created: i64 = sqlx::query_scalar("select count(*) from changes where kind = 'created'")
        .fetch_one(&pool)
        .await
        .expect("the change log");
    assert_eq!(created, ids.len() as i64, "each file's change logged");

    // Pushed: each file commits on its own, its change shown at once.
    let pushed: Vec<RepoId> = (21..=23).map(RepoId).collect();
    let pushes = pushed
        .iter()
        .map(|id| Enqueue::because(*id, Trigger::Push))
        .collect();
    queue.enqueue(pushes).await.expect("enqueued");
    let claims = queue.claim_many("worker", 3).await.expect("claimed");
    assert_eq!(claims.len(), 3);
    let states = first_files(&claims);
    let applied = handler.apply_together(&claims, &states).await;
    assert!(applied.iter().all(Option::is_none), "{applied:?}");
}

/// A claim that lapsed while its batch ran lets nothing commit together:
/// each key is left to be applied alone, as the controller does, and only
/// the lapsed one is refused, its repository unwritten.
#[tokio::test]
async fn a_lapsed_claim_in_a_batch_should_leave_only_its_own_key_unwritten() {
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue.clone());
    let ids: Vec<RepoId> = (1..=3).map(RepoId).collect();
    queue.enqueue(listed(&ids)).await.expect("enqueued");
    let mut claims = queue
        .claim_many("worker", ids.len())
        .await
        .expect("claimed");
    claims.sort_by_key(|c| c.key.0);
    claims[1].token = "not-a-live-claim".to_owned();
    let states = first_files(&claims);
    let applied = handler.apply_together(&claims, &states).await;
    assert!(applied.iter().all(Option::is_none), "{applied:?}");
    let mut alone = Vec::new();
    for (claim, state) in claims.iter().zip(&states) {
        alone.push(handler.apply_claimed(claim, state.clone()).await.ok());
    }
    assert_eq!(alone, vec![Some("synced"), None, Some("synced")]);
    let names: Vec<String> = sqlx::query_scalar("select name from entries order by name")
        .fetch_all(&pool)
        .await
        .expect("the entries");
    assert_eq!(names, vec!["svc-1", "svc-3"]);
    let known: i64 = sqlx::query_scalar("select count(*) from repositories where id = 2")
        .fetch_one(&pool)
        .await
        .expect("a count");
    assert_eq!(known, 0, "nothing written under the lapsed claim");
}
