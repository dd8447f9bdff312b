//! The deletion guard (docs/contract.md#repository-statuses): a listing that suddenly misses most of an
//! installation (a GitHub outage answering an empty organisation with a
//! 200), or a run of removals (an uninstall, many `repository.deleted`
//! webhooks), must not empty the registry. Past a bound per listing
//! period, removals wait on a hold instead.
//!
//! Two places check it: the sweep ([`DeletionGuard::sweep`]) before it
//! enqueues the keys a complete listing no longer returned, and the handler
//! ([`DeletionGuard::removal`]) before it applies each observed removal,
//! counting the removals of the current period. One guard, built from the
//! settings, serves both. This file decides; `holds.rs` and `repos.rs`
//! store.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use super::holds::{self, HoldState};
use super::max_removals::MaxRemovals;
use super::{removal_counts, RegistryError};
use crate::controller::DEFAULT_RESYNC_INTERVAL;
use crate::source::{Partition, RepoId};

/// The bound on removals per partition, and the listing period it counts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletionGuard {
    pub max_removals: MaxRemovals,
    /// The listing period (`ROSTER_RESYNC_INTERVAL`): removals older than
    /// this no longer count.
    pub period: Duration,
}

impl Default for DeletionGuard {
    /// The defaults (docs/operations.md#settings): 10 or 10 %, per hour.
    fn default() -> Self {
        Self {
            max_removals: MaxRemovals::default(),
            period: DEFAULT_RESYNC_INTERVAL,
        }
    }
}

/// What the guard decided about one observed removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Remove the repository's entries as usual.
    Proceed,
    /// Keep status and entries; the repository now waits on `hold`.
    Held {
        hold: i64,
        /// This removal opened the hold (worth a warning).
        created: bool,
        reason: String,
    },
}

impl DeletionGuard {
    /// At most `max_removals` removals per partition within `period` (the
    /// listing period); further removals are held.
    pub fn new(max_removals: MaxRemovals, period: Duration) -> Self {
        Self {
            max_removals,
            period,
        }
    }

    /// Decides whether the observed removal of `id` proceeds. The caller
    /// holds the repository's row lock and the repository is not `removed`
    /// yet; removals of one partition are decided one at a time.
    pub(crate) async fn removal(
        &self,
        conn: &mut PgConnection,
        id: RepoId,
    ) -> Result<Removal, sqlx::Error> {
        match holds::hold_state(conn, id).await? {
            HoldState::Active(hold) => {
                return Ok(Removal::Held {
                    hold,
                    created: false,
                    reason: format!("hold {hold} is active"),
                })
            }
            HoldState::Released(_) => {
                // An operator allowed it: not counted against the period.
                removal_counts::set_removed_at(conn, id, false).await?;
                return Ok(Removal::Proceed);
            }
            HoldState::None => {}
        }
        let partition = removal_counts::partition_of(conn, id).await?;
        // Serialises the count-then-remove of one partition across workers
        // and replicas, so concurrent removals cannot overshoot the bound.
        holds::lock_partition(conn, partition).await?;
        let (removed, total) = removal_counts::removal_counts(conn, partition, self.period).await?;
        let limit = self.max_removals.limit(total);
        if removed < limit {
            removal_counts::set_removed_at(conn, id, true).await?;
            return Ok(Removal::Proceed);
        }
        let reason = format!(
            "{} already had {removed} removals within {} (limit {limit})",
            partition.describe(),
            humantime::format_duration(self.period),
        );
        let opened = holds::open(conn, partition, &reason).await?;
        holds::attach(conn, opened.id, &[id]).await?;
        Ok(Removal::Held {
            hold: opened.id,
            created: opened.created,
            reason,
        })
    }

    /// The sweep guard: of the keys a complete listing of `partition` no longer
    /// returned (`gone`, out of `tracked`), returns those to sweep now.
    ///
    /// Listed repositories leave their holds (a hold with none left clears by
    /// itself). When more than the bound vanished, none is swept: they join the
    /// partition's active hold, one warning is logged, and only repositories of
    /// an already released hold go through.
    pub(crate) async fn sweep(
        &self,
        pool: &PgPool,
        partition: Partition,
        tracked: usize,
        listed: &[RepoId],
        gone: Vec<RepoId>,
    ) -> Result<Vec<RepoId>, RegistryError> {
        let mut tx = pool.begin().await?;
        let cleared = holds::detach(&mut tx, listed).await?;
        if gone.is_empty() {
            tx.commit().await?;
            log_cleared(partition, &cleared);
            return Ok(gone);
        }
        let released: HashSet<RepoId> = holds::released_among(&mut tx, &gone).await?;
        let (pass, candidates): (Vec<RepoId>, Vec<RepoId>) =
            gone.iter().partition(|id| released.contains(id));
        let limit = self.max_removals.limit(tracked);
        if candidates.len() <= limit {
            tx.commit().await?;
            log_cleared(partition, &cleared);
            return Ok(gone);
        }
        let reason = format!(
        "a complete listing of {} no longer returned {} of {tracked} repositories (limit {limit})",
        partition.describe(),
        candidates.len(),
    );
        let opened = holds::open(&mut tx, partition, &reason).await?;
        let attached = holds::attach(&mut tx, opened.id, &candidates).await?;
        if opened.created && attached == 0 {
            // Reconciles hold every one of them and decide their removals
            // themselves: a hold opened here would stay with none left.
            holds::clear_empty(&mut tx, vec![opened.id]).await?;
            tx.commit().await?;
            log_cleared(partition, &cleared);
            return Ok(pass);
        }
        tx.commit().await?;
        log_cleared(partition, &cleared);
        tracing::warn!(
            partition = %partition,
            hold = opened.id,
            held = candidates.len(),
            tracked,
            limit,
            "deletion guard: {reason}; nothing removed: they stay as they are until \
             POST /api/v1/holds/{}/release or the next listing returns them",
            opened.id,
        );
        Ok(pass)
    }
}

fn log_cleared(partition: Partition, cleared: &[i64]) {
    for hold in cleared {
        tracing::info!(
            partition = %partition,
            hold,
            "deletion guard: hold {hold} cleared, its repositories came back"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_guard_should_allow_ten_or_ten_percent_per_hour() {
        let guard = DeletionGuard::default();
        assert_eq!(guard.period, Duration::from_secs(3600));
        assert_eq!(guard.max_removals.limit(40), 10);
        assert_eq!(guard.max_removals.limit(500), 50);
    }
}
