//! The [`WorkQueue`] methods of [`PgQueue`]: claims, leases and their ends.

use super::batch::{ids_and_tokens, CLAIM_MANY, DONE_MANY_AGAIN, DONE_MANY_DELETE, RENEW_MANY};
use super::*;

/// The assignments that end a claim.
const UNCLAIM: &str = "claimed_by = NULL, claim_token = NULL, claimed_until = NULL, rerun = false";

/// A claimed row as the claim statements return it.
type ClaimRow = (i64, i32, Option<Vec<u8>>, Option<Vec<u8>>, i16, String);

fn claim_of((id, attempts, hint, scope, trigger, token): ClaimRow) -> Claim<RepoId> {
    Claim {
        key: RepoId(id),
        attempts: u32::try_from(attempts).unwrap_or(0),
        hint,
        scope,
        trigger: Trigger::from_code(trigger),
        token,
    }
}

impl PgQueue {
    /// Up to `max` ready rows in claim order (with `reads`, only rows
    /// without a hint); of every ten claims this handle takes, one goes to
    /// the listing work that has waited longest.
    async fn claim_ordered(
        &self,
        worker: &str,
        max: usize,
        reads: bool,
    ) -> Result<Vec<Claim<RepoId>>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let max = u64::try_from(max).unwrap_or(u64::MAX);
        let taken = self.claims.load(Ordering::Relaxed);
        let fair = (taken.saturating_add(max) / 10).saturating_sub(taken / 10);
        let rows: Vec<ClaimRow> = sqlx::query_as(CLAIM_MANY)
            .bind(worker)
            .bind(seconds(self.lease))
            .bind(i64::try_from(max).unwrap_or(i64::MAX))
            .bind(i64::try_from(fair).unwrap_or(i64::MAX))
            .bind(reads)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        self.claims.fetch_add(rows.len() as u64, Ordering::Relaxed);
        Ok(rows.into_iter().map(claim_of).collect())
    }
}

impl WorkQueue for PgQueue {
    type Key = RepoId;
    type Error = QueueError;

    async fn enqueue(&self, items: Vec<Enqueue<RepoId>>) -> Result<(), QueueError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let added = self.enqueue_in(&mut conn, items).await?;
        drop(conn);
        self.enqueued(added);
        Ok(())
    }

    async fn claim(&self, worker: &str) -> Result<Option<Claim<RepoId>>, QueueError> {
        Ok(self.claim_ordered(worker, 1, false).await?.pop())
    }

    async fn claim_many(&self, worker: &str, max: usize) -> Result<Vec<Claim<RepoId>>, QueueError> {
        self.claim_ordered(worker, max, false).await
    }

    async fn claim_reads(
        &self,
        worker: &str,
        max: usize,
    ) -> Result<Vec<Claim<RepoId>>, QueueError> {
        self.claim_ordered(worker, max, true).await
    }

    async fn renew_many(&self, claims: &[Claim<RepoId>]) -> Result<Vec<bool>, QueueError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = ids_and_tokens(claims);
        let held: std::collections::HashSet<i64> = sqlx::query_scalar(RENEW_MANY)
            .bind(ids)
            .bind(tokens)
            .bind(seconds(self.lease))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .into_iter()
            .collect();
        Ok(claims.iter().map(|c| held.contains(&c.key.0)).collect())
    }

    async fn done_many(&self, claims: &[Claim<RepoId>]) -> Result<(), QueueError> {
        if claims.is_empty() {
            return Ok(());
        }
        let (ids, tokens) = ids_and_tokens(claims);
        // As in `done`: `rerun` only goes from false to true while a token
        // is unchanged, so a row the delete left for that reason is found
        // by the update, which reads the table afresh.
        let deleted = sqlx::query(DONE_MANY_DELETE)
            .bind(&ids)
            .bind(&tokens)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if deleted.rows_affected() == claims.len() as u64 {
            return Ok(());
        }
        let again = sqlx::query(DONE_MANY_AGAIN)
            .bind(&ids)
            .bind(&tokens)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if again.rows_affected() > 0 {
            self.wake();
        }
        Ok(())
    }

    async fn renew(&self, claim: &Claim<RepoId>) -> Result<bool, QueueError> {
        let renewed = sqlx::query(
            "UPDATE queue SET claimed_until = now() + make_interval(secs => $3)
             WHERE repo_id = $1 AND claim_token = $2",
        )
        .bind(claim.key.0)
        .bind(&claim.token)
        .bind(seconds(self.lease))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(renewed.rows_affected() == 1)
    }

    async fn done(&self, claim: &Claim<RepoId>) -> Result<(), QueueError> {
        // While the token is unchanged `rerun` only goes from false to true,
        // so when the delete finds `rerun` set, the update below finds it too.
        let deleted = sqlx::query(concat!(
            "DELETE FROM queue WHERE repo_id = $1 AND claim_token = $2 AND NOT rerun AND ",
            no_wait!()
        ))
        .bind(claim.key.0)
        .bind(&claim.token)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        if deleted.rows_affected() == 1 {
            return Ok(());
        }
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, attempts = 0, last_error = NULL,
                not_before = now(), enqueued_at = now()
             WHERE repo_id = $1 AND claim_token = $2 AND rerun"
        );
        let again = sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if again.rows_affected() == 1 {
            self.wake();
        }
        Ok(())
    }

    async fn fail(
        &self,
        claim: &Claim<RepoId>,
        error: &str,
        delay: Duration,
    ) -> Result<(), QueueError> {
        // A trigger that arrived during the attempt does not shorten the
        // delay: the id runs again anyway, and the delay may be a rate limit.
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, attempts = attempts + 1, last_error = $3,
                not_before = now() + make_interval(secs => $4)
             WHERE repo_id = $1 AND claim_token = $2"
        );
        sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .bind(error)
            .bind(seconds(delay))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn release(&self, claim: &Claim<RepoId>) -> Result<(), QueueError> {
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, not_before = now()
             WHERE repo_id = $1 AND claim_token = $2"
        );
        let released = sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if released.rows_affected() == 1 {
            self.wake();
        }
        Ok(())
    }

    async fn defer(&self, claim: &Claim<RepoId>, delay: Duration) -> Result<(), QueueError> {
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, not_before = now() + make_interval(secs => $3)
             WHERE repo_id = $1 AND claim_token = $2"
        );
        sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .bind(seconds(delay))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        // Registered now, not at the first poll, so a notification that
        // arrives between this call and the first poll still counts.
        let mut notified = Box::pin(self.signal.notify.notified());
        notified.as_mut().enable();
        let (pool, listening) = (self.pool.clone(), Arc::clone(&self.signal));
        start_once(&self.tasks.listener, move || listen(pool, listening));
        let signal = Arc::clone(&self.signal);
        let poll_interval = self.poll_interval;
        async move {
            if signal.connected.load(Ordering::SeqCst) {
                notified.await;
            } else {
                // No listener: fall back to polling rather than sleep forever.
                let _ = tokio::time::timeout(poll_interval, notified).await;
            }
        }
    }

    async fn depth(&self) -> Result<u64, QueueError> {
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM queue")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn status(&self, key: &RepoId) -> Result<Option<ItemStatus>, QueueError> {
        let row: Option<(i32, Option<String>, f64, bool)> = sqlx::query_as(
            "SELECT attempts, last_error,
                EXTRACT(EPOCH FROM GREATEST(not_before - now(), interval '0'))::float8,
                COALESCE(claimed_until > now(), false)
             FROM queue WHERE repo_id = $1",
        )
        .bind(key.0)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(
            row.map(|(attempts, last_error, ready_in, claimed)| ItemStatus {
                attempts: u32::try_from(attempts).unwrap_or(0),
                last_error,
                ready_in: Duration::try_from_secs_f64(ready_in).unwrap_or(Duration::ZERO),
                claimed,
            }),
        )
    }
}
