//! The test kit's parts a registry runs on (feature `testing`), built as
//! the server builds them: the PostgreSQL queue, the registry's handler, a
//! repository's facts as a listing reports them. The unit tests in `src`
//! and the integration tests (`tests/support`, which re-exports them) build
//! them the same way, here.

pub use crate::db::testing::fresh_database;

use std::sync::Arc;
use std::time::Duration;

use crate::db::queue::PgQueue;
use crate::registry::RegistryHandler;
use crate::source::{InstallationId, RepoInfo};
use sqlx::PgPool;

/// The body of GitHub's example delivery `name` from
/// `tests/fixtures/github/webhooks`; a missing one fails the test that
/// asked for it, naming the path.
pub fn webhook_fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/github/webhooks")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The project file the handler reads, named as the test servers name it.
pub const PROJECT_FILE: &str = "project.yaml";

/// The lease of a claim: longer than any test holds one.
pub const LEASE: Duration = Duration::from_secs(60);

/// The queue of the database behind `pool`, shared as the server shares
/// it between its workers, webhook intake and handler.
pub fn queue(pool: &PgPool) -> Arc<PgQueue> {
    Arc::new(queue_with(pool, LEASE))
}

/// The queue of the database behind `pool` with claims leased for `lease`,
/// not yet shared: for tests of the lease itself, and for those that tune
/// the queue (`with_poll_interval`) or own it outside an `Arc`.
pub fn queue_with(pool: &PgPool, lease: Duration) -> PgQueue {
    PgQueue::new(pool.clone(), lease)
}

/// The registry's handler on `pool`, re-queueing through `queue`, reading
/// [`PROJECT_FILE`].
pub fn handler(pool: &PgPool, queue: Arc<PgQueue>) -> RegistryHandler {
    RegistryHandler::new(pool.clone(), queue, PROJECT_FILE)
}

/// `owner/name` as a local folder would be: no installation, no web page,
/// default branch `main`.
pub fn repo_info(owner: impl Into<String>, name: impl Into<String>) -> RepoInfo {
    RepoInfo {
        owner: owner.into(),
        name: name.into(),
        installation_id: None,
        default_branch: "main".to_owned(),
        html_url: None,
    }
}

/// `owner/name` seen by GitHub App installation `installation`, default
/// branch `main`.
pub fn installed_repo(
    owner: impl Into<String>,
    name: impl Into<String>,
    installation: i64,
) -> RepoInfo {
    RepoInfo {
        installation_id: Some(InstallationId(installation)),
        ..repo_info(owner, name)
    }
}

/// `owner/name` as GitHub lists it for installation `installation`: with
/// its web page, `https://github.com/owner/name`, default branch `main`.
pub fn github_repo(
    owner: impl Into<String>,
    name: impl Into<String>,
    installation: i64,
) -> RepoInfo {
    let repo = installed_repo(owner, name, installation);
    RepoInfo {
        html_url: Some(format!("https://github.com/{}", repo.full_name())),
        ..repo
    }
}

/// `repo` with `branch` as its default branch: a repository whose default
/// branch is not `main`.
pub fn on_branch(repo: RepoInfo, branch: impl Into<String>) -> RepoInfo {
    RepoInfo {
        default_branch: branch.into(),
        ..repo
    }
}
