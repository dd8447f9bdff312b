//! Which repositories the registry tracks per listing partition, for the sweep.

use sqlx::PgPool;

use super::{DeletionGuard, RegistryError};
use crate::controller::{Failure, Tracker};
use crate::source::{InstallationId, Partition, RepoId};

/// The repositories tracked in a partition, except those already removed:
/// nothing is left to reconcile for them. The sweep and the
/// uninstall/suspend webhooks share this notion.
pub async fn tracked_ids<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    partition: Partition,
) -> Result<Vec<RepoId>, sqlx::Error> {
    sqlx::query_scalar(
        "select id from repositories
         where installation_id is not distinct from $1 and status <> 'removed'
         order by id",
    )
    .bind(partition.installation())
    .fetch_all(executor)
    .await
}

/// The installations some repository not yet removed belongs to: the
/// listing compares them with the installations GitHub still lists.
pub async fn remembered_installations<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
) -> Result<Vec<InstallationId>, RegistryError> {
    Ok(sqlx::query_scalar(
        "select distinct installation_id from repositories
         where installation_id is not null and status <> 'removed'",
    )
    .fetch_all(executor)
    .await?)
}

/// The repositories the registry tracks, per partition (removed ones
/// excluded), and the sweep's deletion guard (docs/contract.md#repository-statuses).
#[derive(Debug, Clone)]
pub struct RegistryTracker {
    pool: PgPool,
    guard: DeletionGuard,
}

impl RegistryTracker {
    /// A tracker whose sweep guard has the default bound (10 or 10 %).
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            guard: DeletionGuard::default(),
        }
    }

    /// Sets the sweep's deletion guard: the one the handler shares
    /// (`ROSTER_MAX_REMOVALS`).
    pub fn with_guard(mut self, guard: DeletionGuard) -> Self {
        self.guard = guard;
        self
    }
}

impl Tracker for RegistryTracker {
    type Key = RepoId;
    type Partition = Partition;

    async fn tracked(&self, partition: &Partition) -> Result<Vec<RepoId>, Failure> {
        tracked_ids(&self.pool, *partition)
            .await
            .map_err(|e| Failure::new(RegistryError::Database(e)))
    }

    /// Holds every vanished repository when more than the bound vanished;
    /// listed repositories leave their holds. See [`DeletionGuard::sweep`].
    async fn guard_sweep(
        &self,
        partition: &Partition,
        tracked: usize,
        listed: &[RepoId],
        gone: Vec<RepoId>,
    ) -> Result<Vec<RepoId>, Failure> {
        self.guard
            .sweep(&self.pool, *partition, tracked, listed, gone)
            .await
            .map_err(Failure::new)
    }
}
