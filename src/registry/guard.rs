//! The deletion guard (SPEC §3): a listing that suddenly misses most of an
//! installation (a GitHub outage answering an empty organisation with a
//! 200), or a run of removals (an uninstall, many `repository.deleted`
//! webhooks), must not empty the registry. Past a bound per listing
//! period, removals wait on a hold instead.
//!
//! Two places check it: the sweep ([`sweep`]) before it enqueues the keys a
//! complete listing no longer returned, and the handler ([`DeletionGuard::removal`])
//! before it applies each observed removal, counting the removals of the
//! current period.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use super::holds::{self, HoldState};
use super::tracker::{parse_partition, partition_name};
use super::RegistryError;
use crate::config::MaxRemovals;
use crate::controller::DEFAULT_RESYNC_INTERVAL;
use crate::source::RepoId;

/// The bound on removals per partition, and the listing period it counts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletionGuard {
    pub max_removals: MaxRemovals,
    /// The listing period (`ROSTER_RESYNC_INTERVAL`): removals older than
    /// this no longer count.
    pub period: Duration,
}

impl Default for DeletionGuard {
    /// The defaults of SPEC §4: 10 or 10 %, per hour.
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
                set_removed_at(conn, id, false).await?;
                return Ok(Removal::Proceed);
            }
            HoldState::None => {}
        }
        let installation: Option<i64> =
            sqlx::query_scalar("select installation_id from repositories where id = $1")
                .bind(id)
                .fetch_one(&mut *conn)
                .await?;
        let partition = partition_name(installation);
        // Serialises the count-then-remove of one partition across workers
        // and replicas, so concurrent removals cannot overshoot the bound.
        sqlx::query("select pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("roster.deletion-guard/{partition}"))
            .execute(&mut *conn)
            .await?;
        let (removed, total): (i64, i64) = sqlx::query_as(
            "select count(*) filter (where status = 'removed'
                                       and removed_at > now() - make_interval(secs => $2)),
                    count(*) filter (where status <> 'removed'
                                       or removed_at > now() - make_interval(secs => $2))
             from repositories where installation_id is not distinct from $1",
        )
        .bind(installation)
        .bind(self.period.as_secs_f64())
        .fetch_one(&mut *conn)
        .await?;
        let limit = self.max_removals.limit(usize::try_from(total).unwrap_or(0));
        let removed = usize::try_from(removed).unwrap_or(0);
        if removed < limit {
            set_removed_at(conn, id, true).await?;
            return Ok(Removal::Proceed);
        }
        let reason = format!(
            "{} already had {removed} removals within {} (limit {limit})",
            describe(&partition),
            humantime::format_duration(self.period),
        );
        let opened = holds::open(conn, &partition, &reason).await?;
        holds::attach(conn, opened.id, &[id]).await?;
        Ok(Removal::Held {
            hold: opened.id,
            created: opened.created,
            reason,
        })
    }
}

/// Records when a counted removal happened; an uncounted one clears it.
async fn set_removed_at(
    conn: &mut PgConnection,
    id: RepoId,
    counted: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query("update repositories set removed_at = case when $2 then now() end where id = $1")
        .bind(id)
        .bind(counted)
        .execute(conn)
        .await?;
    Ok(())
}

/// The sweep guard: of the keys a complete listing of `partition` no longer
/// returned (`gone`, out of `tracked`), returns those to sweep now.
///
/// Listed repositories leave their holds (a hold with none left clears by
/// itself). When more than the bound vanished, none is swept: they join the
/// partition's active hold, one warning is logged, and only repositories of
/// an already released hold go through.
pub(crate) async fn sweep(
    pool: &PgPool,
    max_removals: MaxRemovals,
    partition: &str,
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
    let ids: Vec<i64> = gone.iter().map(|id| id.0).collect();
    let released: HashSet<RepoId> = sqlx::query_scalar(
        "select r.id from repositories r join holds h on h.id = r.hold_id
         where r.id = any($1) and h.released_at is not null",
    )
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .collect();
    let (pass, candidates): (Vec<RepoId>, Vec<RepoId>) =
        gone.iter().partition(|id| released.contains(id));
    let limit = max_removals.limit(tracked);
    if candidates.len() <= limit {
        tx.commit().await?;
        log_cleared(partition, &cleared);
        return Ok(gone);
    }
    let reason = format!(
        "a complete listing of {} no longer returned {} of {tracked} repositories (limit {limit})",
        describe(partition),
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
        partition,
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

fn log_cleared(partition: &str, cleared: &[i64]) {
    for hold in cleared {
        tracing::info!(
            partition,
            hold,
            "deletion guard: hold {hold} cleared, its repositories came back"
        );
    }
}

/// How a partition reads in a sentence.
fn describe(partition: &str) -> String {
    match parse_partition(partition) {
        Some(Some(id)) => format!("installation {id}"),
        Some(None) => "the local folder".to_string(),
        None => partition.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_should_name_installations_and_the_local_folder() {
        assert_eq!(describe("installation/42"), "installation 42");
        assert_eq!(describe("local"), "the local folder");
        assert_eq!(describe("other"), "other");
    }

    #[test]
    fn default_guard_should_allow_ten_or_ten_percent_per_hour() {
        let guard = DeletionGuard::default();
        assert_eq!(guard.period, Duration::from_secs(3600));
        assert_eq!(guard.max_removals.limit(40), 10);
        assert_eq!(guard.max_removals.limit(500), 50);
    }
}
