//! What one reconcile costs the database, counted on the wire: each
//! statement a file's reconcile sends goes through a proxy that counts
//! them (docs/performance.md, "GitHub: the full sync beside the listing").
//! An App's installation reconciles every repository with a project file
//! this way, so each round trip here is paid thousands of times.

use crate::support;
use support::registry::{handler, installed_repo, queue};
use support::statement_count::StatementCount;

use roster::controller::Handler;
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
