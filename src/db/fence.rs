//! Fencing: a reconcile commits only while its claim on the id is live.
//!
//! The controller drops an attempt whose lease it cannot renew, well before
//! the lease runs out. That covers a worker that notices; this covers one
//! that does not in time (a process paused past its lease, a renewal that
//! raced the claim of another replica). The registry and the queue share one
//! database, so the reconcile's own transaction checks the claim last, with
//! a row lock that it keeps until it commits:
//! - the claim is still this attempt's (`claim_token`) and its lease has not
//!   run out by the database's clock, or the transaction rolls back;
//! - while the lock is held no other worker can claim the id (claims skip
//!   locked rows), so the commit that follows cannot overlap another
//!   worker's attempt, however long the commit itself takes.
//!
//! The check comes last, after the registry's rows are locked, in the order
//! webhook intake locks them too (repository, then queue row).

use std::future::Future;

use sqlx::{PgConnection, Postgres, Transaction};

use super::queue::PgQueue;
use crate::controller::Claim;
use crate::source::RepoId;

/// A queue whose claims a registry transaction can check before it commits.
pub trait ClaimFence: Send + Sync + 'static {
    /// Locks the queue row of `claim` in the caller's transaction and tells
    /// whether the claim is still live; `false` means the transaction must
    /// not commit (another worker holds the id, or soon may).
    fn holds(
        &self,
        conn: &mut PgConnection,
        claim: &Claim<RepoId>,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;
}

/// Whether the claim on repository `$1` with token `$2` is live, for a
/// statement that checks it without locking the queue row ([`HOLDS`]
/// locks it): `src/registry/unchanged.rs` says when that is enough.
pub const CLAIM_IS_LIVE: &str = "exists (
    select 1 from queue
    where repo_id = $1 and claim_token = $2 and claimed_until > clock_timestamp())";

/// [`CLAIM_IS_LIVE`] for each row of a batch's input `i` (`i.id`,
/// `i.token`), in statements that apply a batch at once.
pub const INPUT_CLAIM_IS_LIVE: &str = "exists (
    select 1 from queue q
    where q.repo_id = i.id and q.claim_token = i.token and q.claimed_until > clock_timestamp())";

/// A query of one row when the claim on repository `repo` with token
/// `token` (SQL expressions, placeholders as a rule) is live, locking the
/// queue row as [`ClaimFence::holds`] does: for a statement that ends a
/// reconcile and checks its claim in the same round trip.
///
/// `clock_timestamp()`, not `now()`: `now()` is when the transaction began,
/// which may be long before the commit this check guards.
pub fn claim_locked(repo: &str, token: &str) -> String {
    format!(
        "select 1 from queue
         where repo_id = {repo} and claim_token = {token} and claimed_until > clock_timestamp()
         for update"
    )
}

static HOLDS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| claim_locked("$1", "$2"));

impl ClaimFence for PgQueue {
    async fn holds(
        &self,
        conn: &mut PgConnection,
        claim: &Claim<RepoId>,
    ) -> Result<bool, sqlx::Error> {
        let row: Option<i32> = sqlx::query_scalar(&HOLDS)
            .bind(claim.key.0)
            .bind(&claim.token)
            .fetch_optional(conn)
            .await?;
        Ok(row.is_some())
    }
}

/// Commits `tx` when `claim` is still live, or when there is no claim to
/// check (a caller that holds the id otherwise, as tests do); otherwise
/// rolls it back. Returns whether it committed.
pub async fn commit_if_held<Q: ClaimFence>(
    queue: &Q,
    mut tx: Transaction<'_, Postgres>,
    claim: Option<&Claim<RepoId>>,
) -> Result<bool, sqlx::Error> {
    if let Some(claim) = claim {
        if !queue.holds(&mut tx, claim).await? {
            tx.rollback().await?;
            return Ok(false);
        }
    }
    tx.commit().await?;
    Ok(true)
}
