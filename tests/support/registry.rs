//! The parts a registry runs on, built as the server builds them: the
//! PostgreSQL queue, the registry's handler, a repository's facts as a
//! listing reports them. Tests that drive the registry themselves start
//! here; tests that only need rows in place use [`crate::seed`].

use std::sync::Arc;
use std::time::Duration;

use roster::db::queue::PgQueue;
use roster::registry::RegistryHandler;
use roster::source::{InstallationId, RepoInfo};
use sqlx::PgPool;

/// The project file the handler reads, named as the test servers name it.
pub const PROJECT_FILE: &str = "project.yaml";

/// The lease of a claim: longer than any test holds one.
pub const LEASE: Duration = Duration::from_secs(60);

/// The queue of the database behind `pool`.
pub fn queue(pool: &PgPool) -> Arc<PgQueue> {
    Arc::new(PgQueue::new(pool.clone(), LEASE))
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
