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
        self.request_listing_in(&mut conn).await
    }

    async fn listing_finished(&self) -> Result<(), QueueError> {
        sqlx::query("UPDATE listing_schedule SET last_finished_at = now()")
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}
