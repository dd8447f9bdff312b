//! Retention of the change log: by age (`ROSTER_HISTORY_RETENTION`, 90
//! days by default) and by size (`ROSTER_HISTORY_MAX_BYTES`, 1 GiB by
//! default, counted by each change's stored `bytes`): the oldest changes
//! go, in small batches.
//!
//! Only ever a prefix of the log is removed (the oldest `seq`s), so what is
//! kept stays gapless and "the oldest kept `seq`" says exactly what a
//! reader missed. Pruning takes no lock a reconcile waits for: it deletes
//! rows no writer touches (writers only append above the head) and never
//! locks the head.

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

/// Removes up to `batch` of the oldest changes while the log takes more
/// than `max_bytes`, but none after `needed_after` (the changes a
/// notification target has not acknowledged yet; a target more than
/// `max_bytes` behind is stalled first, which moves its cursor to the
/// head). Returns how many went.
pub async fn prune_oversize_once(
    pool: &PgPool,
    max_bytes: u64,
    needed_after: Option<i64>,
    batch: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "with total as (select coalesce(sum(bytes), 0) as bytes from changes),
              prefix as (
                  select seq, sum(bytes) over (order by seq) - bytes as dropped_before
                  from (select seq, bytes from changes order by seq limit $2) s)
         delete from changes where seq in (
             select p.seq from prefix p, total t
             where t.bytes - p.dropped_before > $1 and ($3::bigint is null or p.seq <= $3))",
    )
    .bind(i64::try_from(max_bytes).unwrap_or(i64::MAX))
    .bind(batch.max(1))
    .bind(needed_after)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Removes the oldest changes until the log takes at most `max_bytes`, or
/// only changes after `needed_after` are left; returns how many went.
pub async fn prune_oversize(
    pool: &PgPool,
    max_bytes: u64,
    needed_after: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let mut total = 0;
    loop {
        let removed = prune_oversize_once(pool, max_bytes, needed_after, BATCH).await?;
        total += removed;
        if removed < BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Bytes of the changes after `seq`: how far behind a reader at `seq` is.
pub async fn bytes_after(pool: &PgPool, seq: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select coalesce(sum(bytes), 0)::bigint from changes where seq > $1")
        .bind(seq)
        .fetch_one(pool)
        .await
}

/// Bytes the log takes now, as the size bound counts them.
pub async fn stored_bytes(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select coalesce(sum(bytes), 0)::bigint from changes")
        .fetch_one(pool)
        .await
}
