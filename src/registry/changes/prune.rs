//! Retention of the change log (`ROSTER_HISTORY_RETENTION`, 90 days by
//! default): the oldest changes go, in small batches.
//!
//! Only ever a prefix of the log is removed (the oldest `seq`s), so what is
//! kept stays gapless and "the oldest kept `seq`" says exactly what a
//! reader missed. Pruning takes no lock a reconcile waits for: it deletes
//! rows no writer touches (writers only append above the head) and never
//! locks the head.

use std::future::Future;
use std::time::Duration;

use sqlx::PgPool;

/// Most changes one statement removes, so each is short.
pub const BATCH: i64 = 1000;

/// How often the pruning loop looks for expired changes.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// Removes up to `batch` of the oldest changes older than `retention`.
/// Returns how many went.
pub async fn prune_once(
    pool: &PgPool,
    retention: Duration,
    batch: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "with prefix as (select seq, at from changes order by seq limit $2)
         delete from changes where seq in (
             select seq from prefix
             where at < clock_timestamp() - make_interval(secs => $1))",
    )
    .bind(retention.as_secs_f64())
    .bind(batch.max(1))
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Removes every expired change, one batch at a time; returns how many.
pub async fn prune_expired(pool: &PgPool, retention: Duration) -> Result<u64, sqlx::Error> {
    let mut total = 0;
    loop {
        let removed = prune_once(pool, retention, BATCH).await?;
        total += removed;
        if removed < BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Prunes every `interval` until `stop` completes; errors are logged and
/// the next round tries again.
pub async fn run_pruning_loop(
    pool: PgPool,
    retention: Duration,
    interval: Duration,
    stop: impl Future<Output = ()>,
) {
    let work = async {
        loop {
            match prune_expired(&pool, retention).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "change log: pruned expired changes"),
                Err(error) => tracing::warn!(%error, "change log: pruning failed"),
            }
            tokio::time::sleep(interval).await;
        }
    };
    tokio::select! {
        () = work => {}
        () = stop => {}
    }
}
