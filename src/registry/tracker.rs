//! Which repositories the registry tracks per listing partition, for the sweep.

use sqlx::PgPool;

use super::guard;
use crate::config::MaxRemovals;
use crate::controller::{Failure, Tracker};
use crate::source::RepoId;

const LOCAL: &str = "local";
const INSTALLATION: &str = "installation/";

/// The repositories tracked for an installation (`None`: the local folder),
/// except those already removed: nothing is left to reconcile for them.
/// The sweep and the uninstall/suspend webhooks share this notion.
pub async fn tracked_ids<'e, E: sqlx::PgExecutor<'e>>(
    executor: E,
    installation: Option<i64>,
) -> Result<Vec<RepoId>, sqlx::Error> {
    sqlx::query_scalar(
        "select id from repositories
         where installation_id is not distinct from $1 and status <> 'removed'
         order by id",
    )
    .bind(installation)
    .fetch_all(executor)
    .await
}

/// The partition a repository belongs to: `local` for the local folder
/// source, `installation/<id>` for a GitHub App installation. Sources name
/// their listing partitions with it so the sweep compares like with like.
pub fn partition_name(installation_id: Option<i64>) -> String {
    match installation_id {
        None => LOCAL.to_string(),
        Some(id) => format!("{INSTALLATION}{id}"),
    }
}

/// The inverse of [`partition_name`]; `None` for a name it does not make.
pub fn parse_partition(name: &str) -> Option<Option<i64>> {
    if name == LOCAL {
        return Some(None);
    }
    let id = name.strip_prefix(INSTALLATION)?;
    // Only the canonical spelling, so that names round-trip.
    let parsed = id.parse::<i64>().ok()?;
    (parsed.to_string() == id).then_some(Some(parsed))
}

/// The repositories the registry tracks, per partition (removed ones
/// excluded), and the sweep's deletion guard (SPEC §3).
#[derive(Debug, Clone)]
pub struct RegistryTracker {
    pool: PgPool,
    max_removals: MaxRemovals,
}

impl RegistryTracker {
    /// A tracker whose sweep guard has the default bound (10 or 10 %).
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            max_removals: MaxRemovals::default(),
        }
    }

    /// Sets the sweep guard's bound (`ROSTER_MAX_REMOVALS`).
    pub fn with_max_removals(mut self, max_removals: MaxRemovals) -> Self {
        self.max_removals = max_removals;
        self
    }
}

impl Tracker for RegistryTracker {
    type Key = RepoId;

    async fn tracked(&self, partition: &str) -> Result<Vec<RepoId>, Failure> {
        let installation = parse_partition(partition)
            .ok_or_else(|| Failure::new(format!("unknown listing partition {partition:?}")))?;
        tracked_ids(&self.pool, installation)
            .await
            .map_err(|e| Failure::new(format!("registry database: {e}")))
    }

    /// Holds every vanished repository when more than the bound vanished;
    /// listed repositories leave their holds. See [`guard::sweep`].
    async fn guard_sweep(
        &self,
        partition: &str,
        tracked: usize,
        listed: &[RepoId],
        gone: Vec<RepoId>,
    ) -> Result<Vec<RepoId>, Failure> {
        guard::sweep(
            &self.pool,
            self.max_removals,
            partition,
            tracked,
            listed,
            gone,
        )
        .await
        .map_err(|e| Failure::new(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_should_round_trip() {
        for installation in [None, Some(0), Some(42), Some(i64::MAX)] {
            assert_eq!(
                parse_partition(&partition_name(installation)),
                Some(installation)
            );
        }
        assert_eq!(partition_name(Some(7)), "installation/7");
        assert_eq!(partition_name(None), "local");
    }

    #[test]
    fn parse_partition_should_reject_other_names() {
        for name in [
            "",
            "Local",
            "installation/",
            "installation/x",
            "installation/007",
            "org/1",
        ] {
            assert_eq!(parse_partition(name), None, "{name}");
        }
    }
}
