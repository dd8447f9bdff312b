//! The [`ListingSchedule`] of [`PgQueue`]: one row, `listing_schedule`,
//! shared by every replica.

use super::*;

impl ListingSchedule for PgQueue {
    async fn take_listing(&self, interval: Duration) -> Result<bool, QueueError> {
        // The row lock makes concurrent callers wait, then re-check the
        // condition against the winner's update: exactly one gets the row.
        let taken = sqlx::query(
            "UPDATE listing_schedule SET last_started_at = now(), requested = false
             WHERE requested OR last_started_at <= now() - make_interval(secs => $1)",
        )
        .bind(seconds(interval))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(taken.rows_affected() == 1)
    }

    async fn request_listing(&self) -> Result<(), QueueError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        self.request_listing_in(&mut conn).await?;
        self.listing_requested();
        Ok(())
    }

    async fn listing_asked(&self) {
        self.signal.listing.notified().await;
    }

    async fn listing_finished(&self) -> Result<(), QueueError> {
        sqlx::query("UPDATE listing_schedule SET last_finished_at = now()")
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}

/// What a listing must have done to have seen an event that asks for one
/// ([`PgQueue::request_listing_unless_seen_in`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// A listing that found this partition lists it whole.
    pub partition: String,
    /// A listing that started after this moment (Unix seconds) found what
    /// the event is about; `None`: only one that found the partition did.
    pub created_at: Option<i64>,
}

/// Records that a listing found `partitions` and is listing them now, so
/// that a request about how they were created asks for no other listing;
/// a request that waited for this listing (`awaited`) and names another
/// partition asks for one now. A listing that could not learn its
/// partitions records none, so every awaited one asks.
pub async fn partitions_found(pool: &PgPool, partitions: &[String]) -> Result<(), QueueError> {
    sqlx::query(
        "WITH found AS (
             INSERT INTO listed_partitions (partition, found_at)
             SELECT p, now() FROM unnest($1::text[]) AS p
             ON CONFLICT (partition) DO UPDATE SET found_at = excluded.found_at
         )
         UPDATE listing_schedule SET
             requested = requested
                 OR EXISTS (SELECT 1 FROM unnest(awaited) AS a(p) WHERE p <> ALL($1::text[])),
             awaited = '{}',
             partitions_recorded_at = now()",
    )
    .bind(partitions)
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}

/// Forgets that a listing found `partition`: its listing stopped part-way,
/// so it has not seen all of it.
pub async fn partition_unlisted(pool: &PgPool, partition: &str) -> Result<(), QueueError> {
    sqlx::query("DELETE FROM listed_partitions WHERE partition = $1")
        .bind(partition)
        .execute(pool)
        .await
        .map_err(db)?;
    Ok(())
}
