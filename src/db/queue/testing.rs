//! Seeding for tests and benchmarks (feature `testing`): what only time
//! gives the queue and the listing schedule (an id waiting for minutes, a
//! listing that ran a while ago), after the state itself was reached
//! through [`PgQueue`].

use super::*;

/// Moves the enqueue time of a queued id `ago` into the past, as if it had
/// waited that long for a worker.
pub async fn backdate_enqueued(pool: &PgPool, id: RepoId, ago: Duration) -> Result<(), QueueError> {
    sqlx::query(
        "UPDATE queue SET enqueued_at = now() - make_interval(secs => $2) WHERE repo_id = $1",
    )
    .bind(id.0)
    .bind(seconds(ago))
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}

/// Moves the last listing's start and finish into the past.
pub async fn backdate_listing(
    pool: &PgPool,
    started_ago: Duration,
    finished_ago: Duration,
) -> Result<(), QueueError> {
    sqlx::query(
        "UPDATE listing_schedule SET last_started_at = now() - make_interval(secs => $1),
             last_finished_at = now() - make_interval(secs => $2)",
    )
    .bind(seconds(started_ago))
    .bind(seconds(finished_ago))
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}
