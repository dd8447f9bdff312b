//! Keeping the claims of a batch alive while it runs, and knowing when to
//! stop.
//!
//! A claim is only exclusive while its lease lasts. A worker that cannot
//! renew (the queue's store is unreachable, or answers errors) cannot know
//! whether it still holds the key, and once the lease runs out another
//! worker may claim it. So the attempt is dropped while the last lease the
//! worker is sure of still has a third of its length to run: the handler's
//! future is dropped, which rolls back whatever it had not committed, well
//! before anybody else can take the key.

use std::time::Duration;

use tokio::time::Instant;

use super::queue::{Claim, WorkQueue};

/// Longest lease the arithmetic below works with; longer ones are treated as
/// this (a year is already "never runs out" for an attempt).
const MAX_LEASE: Duration = Duration::from_secs(365 * 24 * 3600);

/// Why an attempt (a batch) has to be dropped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abandon {
    /// The queue says another claim holds one of the keys now.
    Lost,
    /// No renewal succeeded for two thirds of the lease: the worker cannot
    /// tell whether it still holds the key, and soon nobody would stop
    /// another worker from claiming it.
    Unconfirmed {
        /// Time since the last renewal that succeeded was asked for (or since
        /// the claim was asked for, when none did).
        since: Duration,
    },
}

/// When the renewals of one claim happen, and when the attempt gives up.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTimes {
    pub lease: Duration,
}

impl LeaseTimes {
    /// A successful renewal is followed by the next after this long.
    pub fn renew_every(&self) -> Duration {
        self.lease() / 3
    }

    /// After a failed renewal, the next try comes after this long.
    pub fn retry_every(&self) -> Duration {
        self.lease() / 12
    }

    /// The attempt is dropped when less than this is left of the last lease
    /// the worker is sure of: time for the drop to roll the work back, and
    /// for clocks and round trips to differ, before anyone else may claim.
    pub fn margin(&self) -> Duration {
        self.lease() / 3
    }

    fn lease(&self) -> Duration {
        self.lease.min(MAX_LEASE)
    }
}

/// Renews every lease of `claims` (one batch, renewed together) while its
/// attempt runs and returns only when the attempt must be dropped: one of
/// the claims was lost, or no renewal of the batch succeeded for two thirds
/// of the lease. `claimed_at` is when the claims were asked for: the leases
/// the queue granted started no earlier, so counting from there errs on the
/// safe side (the same holds for each renewal).
///
/// Each renewal is bounded by the moment to give up, so a call that hangs
/// (a silent network) cannot keep the attempt alive either.
pub async fn keep<Q: WorkQueue>(
    queue: &Q,
    claims: &[Claim<Q::Key>],
    claimed_at: Instant,
    times: LeaseTimes,
) -> Abandon {
    let mut renewed_at = claimed_at;
    let mut next = claimed_at + times.renew_every();
    loop {
        let give_up = renewed_at + (times.lease() - times.margin());
        tokio::time::sleep_until(next.min(give_up)).await;
        let asked = Instant::now();
        if asked >= give_up {
            return Abandon::Unconfirmed {
                since: asked - renewed_at,
            };
        }
        match tokio::time::timeout_at(give_up, queue.renew_many(claims)).await {
            Ok(Ok(kept)) => {
                // A missing answer counts as lost: nothing says it is held.
                let lost: Vec<String> = claims
                    .iter()
                    .zip(kept.iter().chain(std::iter::repeat(&false)))
                    .filter(|(_, kept)| !**kept)
                    .map(|(c, _)| c.key.to_string())
                    .collect();
                if !lost.is_empty() {
                    tracing::warn!(keys = %lost.join(","), "lease lost");
                    return Abandon::Lost;
                }
                renewed_at = asked;
                next = asked + times.renew_every();
            }
            Ok(Err(e)) => {
                let left = give_up.saturating_duration_since(Instant::now());
                tracing::warn!(
                    keys = claims.len(),
                    error = %e,
                    gives_up_in_ms = left.as_millis() as u64,
                    "lease renewal failed; retrying",
                );
                next = Instant::now() + times.retry_every();
            }
            Err(_) => {
                return Abandon::Unconfirmed {
                    since: Instant::now() - renewed_at,
                }
            }
        }
    }
}
