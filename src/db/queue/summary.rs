//! The queue and the listing schedule at a glance, for the dashboard.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// The work queue at a glance, for the dashboard's overview.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueSummary {
    /// Every id in the queue.
    pub depth: i64,
    /// Ids a worker may take now but none has taken yet.
    pub ready: i64,
    /// Ids waiting out a backoff after a failure.
    pub retrying: i64,
    /// Ids a worker is handling now.
    pub in_progress: i64,
    /// When the longest-waiting ready id was enqueued: a growing age means
    /// the workers do not keep up.
    pub oldest_ready_since: Option<DateTime<Utc>>,
}

/// Counts the queue's ids by what they wait for.
pub async fn summary(pool: &PgPool) -> Result<QueueSummary, sqlx::Error> {
    let (depth, ready, retrying, in_progress, oldest_ready_since) = sqlx::query_as(
        "with q as (
             select enqueued_at, not_before,
                    coalesce(claimed_until > now(), false) as busy
             from queue
         )
         select count(*),
                count(*) filter (where not busy and not_before <= now()),
                count(*) filter (where not busy and not_before > now()),
                count(*) filter (where busy),
                min(enqueued_at) filter (where not busy and not_before <= now())
         from q",
    )
    .fetch_one(pool)
    .await?;
    Ok(QueueSummary {
        depth,
        ready,
        retrying,
        in_progress,
        oldest_ready_since,
    })
}

/// When the periodic org-wide listing last ran, as the shared schedule
/// row records it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListingTimes {
    /// `None` before the first listing.
    pub last_started_at: Option<DateTime<Utc>>,
    /// The last listing that completed without error; `None` before one has.
    pub last_finished_at: Option<DateTime<Utc>>,
    /// An operator asked for a listing that has not started yet.
    pub requested: bool,
}

/// Reads the listing schedule (one row, see `migrations/0002_queue.sql`).
pub async fn listing_times(pool: &PgPool) -> Result<ListingTimes, sqlx::Error> {
    type Row = (Option<DateTime<Utc>>, Option<DateTime<Utc>>, bool);
    let row: Option<Row> = sqlx::query_as(
        "select case when isfinite(last_started_at) then last_started_at end,
                last_finished_at, requested
         from listing_schedule",
    )
    .fetch_optional(pool)
    .await?;
    Ok(row
        .map(
            |(last_started_at, last_finished_at, requested)| ListingTimes {
                last_started_at,
                last_finished_at,
                requested,
            },
        )
        .unwrap_or_default())
}
