//! How many webhook bodies are read and verified at once (docs/contract.md#bounds).
//!
//! A body is in memory from its first byte until its signature is checked,
//! and whoever can reach the port can send one: 20 senders of 25 MiB each
//! took the server from 16 MB to 534 MB before any signature was checked.
//! So a request waits, before a byte of its body is read, for one of
//! [`WebhookLimits::concurrency`] slots (`ROSTER_WEBHOOK_CONCURRENCY`).
//! A body over [`LARGE_BODY`] (or of undeclared length, which may grow to
//! the 25 MiB limit) also waits for one of [`WebhookLimits::large`] places,
//! taken before the slot so that a large body waiting does not hold a slot
//! a small delivery, GitHub's usual, could use. Bodies in memory thus take
//! at most `large × 25 MiB + concurrency × 1 MiB`. Past
//! [`WebhookLimits::wait`] the request is answered 503, its body unread.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default of `ROSTER_WEBHOOK_CONCURRENCY`.
pub const DEFAULT_CONCURRENCY: usize = 32;

/// How long a delivery waits for its turn before it is answered 503; GitHub
/// gives up after 10 s anyway, and its log then shows a failure that a
/// redelivery recovers.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(10);

/// A body declared larger than this, or not declared at all, is large.
pub const LARGE_BODY: u64 = 1024 * 1024;

/// Large bodies read at once by default.
pub const LARGE_AT_ONCE: usize = 2;

/// The bounds of the webhook route; [`Default`] gives the production ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookLimits {
    /// Bodies read and verified at once (`ROSTER_WEBHOOK_CONCURRENCY`).
    pub concurrency: usize,
    /// Of those, how many may be large (over [`LARGE_BODY`]).
    pub large: usize,
    /// How long a request waits for its turn before it is answered 503.
    pub wait: Duration,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        WebhookLimits {
            concurrency: DEFAULT_CONCURRENCY,
            large: LARGE_AT_ONCE,
            wait: ADMISSION_WAIT,
        }
    }
}

/// The slots, shared by every request of the route.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    large: Arc<Semaphore>,
    wait: Duration,
}

/// A request's turn: while it is held, its body may be read and verified.
#[derive(Debug)]
pub struct Turn {
    _slot: OwnedSemaphorePermit,
    _large: Option<OwnedSemaphorePermit>,
}

/// No turn came within the wait (answered 503 with `Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many webhook deliveries are being read at once; retry in {}s", .retry_after.as_secs())]
pub struct Busy {
    /// What the answer's `Retry-After` says.
    pub retry_after: Duration,
}

impl Admission {
    /// Slots for `limits` (a zero is taken as one).
    pub fn new(limits: WebhookLimits) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            large: Arc::new(Semaphore::new(limits.large.max(1))),
            wait: limits.wait,
        }
    }

    /// Waits for a turn to read a body of `declared` bytes (`None`: not
    /// declared).
    pub async fn admit(&self, declared: Option<u64>) -> Result<Turn, Busy> {
        let busy = Busy {
            retry_after: self.wait.max(Duration::from_secs(1)),
        };
        let is_large = declared.is_none_or(|length| length > LARGE_BODY);
        let take = async {
            let large = match is_large {
                true => Some(self.large.clone().acquire_owned().await),
                false => None,
            };
            let slot = self.slots.clone().acquire_owned().await;
            match (large.transpose(), slot) {
                (Ok(large), Ok(slot)) => Ok(Turn {
                    _slot: slot,
                    _large: large,
                }),
                // The semaphores are never closed.
                _ => Err(busy),
            }
        };
        tokio::time::timeout(self.wait, take)
            .await
            .unwrap_or(Err(busy))
    }

    /// Slots free right now.
    pub fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(concurrency: usize, large: usize) -> WebhookLimits {
        WebhookLimits {
            concurrency,
            large,
            wait: Duration::from_secs(10),
        }
    }

    const SMALL: Option<u64> = Some(4096);
    const LARGE: Option<u64> = Some(25 * 1024 * 1024);

    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_slots_should_wait_the_whole_wait_then_be_refused() {
        let admission = Admission::new(WebhookLimits {
            concurrency: 2,
            ..WebhookLimits::default()
        });
        let first = admission.admit(SMALL).await;
        let second = admission.admit(SMALL).await;
        assert!(first.is_ok() && second.is_ok());
        let started = tokio::time::Instant::now();
        let third = admission.admit(SMALL).await;
        assert_eq!(
            third.err(),
            Some(Busy {
                retry_after: Duration::from_secs(10)
            })
        );
        assert_eq!(started.elapsed(), ADMISSION_WAIT);
        assert_eq!(ADMISSION_WAIT, Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_request_should_get_the_slot_a_finished_one_frees() {
        let admission = Arc::new(Admission::new(limits(1, 2)));
        let first = admission.admit(SMALL).await;
        assert!(first.is_ok());
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(SMALL).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(admission.free_slots(), 0);
        drop(first);
        assert!(matches!(waiting.await, Ok(true)));
        assert_eq!(admission.free_slots(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn large_bodies_should_wait_for_each_other_while_small_ones_pass() {
        let admission = Arc::new(Admission::new(limits(32, 2)));
        let one = admission.admit(LARGE).await;
        let two = admission.admit(None).await;
        assert!(one.is_ok() && two.is_ok());
        let third_large = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(Some(LARGE_BODY + 1)).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The waiting large body holds no slot: 30 small ones still pass.
        assert_eq!(admission.free_slots(), 30);
        let small: Vec<_> =
            futures_util::future::join_all((0..30).map(|_| admission.admit(Some(LARGE_BODY))))
                .await;
        assert!(small.iter().all(Result::is_ok));
        drop(small);
        drop(one);
        assert!(matches!(third_large.await, Ok(true)));
    }
}
