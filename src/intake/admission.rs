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
//!
//! A slot is held only while the body arrives as GitHub sends it, at once:
//! past [`Turn::deadline`] ([`WebhookLimits::body_grace`] and a second per
//! [`MIN_BODY_RATE`] bytes declared) the request is answered 408. And the
//! requests of one client (its [`Sender`] address) hold at most
//! [`WebhookLimits::per_client`] slots; the rest of them wait for one of
//! those, not for a slot, so 100 slow senders from one address leave the
//! other slots to GitHub's deliveries.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
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

/// Slots one client may hold by default: a quarter, so that one address
/// that sends slowly leaves most of them to GitHub's.
pub const DEFAULT_PER_CLIENT: usize = 8;

/// GitHub sends a body at once, just after its header: a body gets this
/// long, plus a second per [`MIN_BODY_RATE`] bytes it declares.
pub const BODY_GRACE: Duration = Duration::from_secs(3);

/// The slowest a body may arrive, in bytes a second, past [`BODY_GRACE`].
pub const MIN_BODY_RATE: u64 = 1024 * 1024;

/// The bounds of the webhook route; [`Default`] gives the production ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookLimits {
    /// Bodies read and verified at once (`ROSTER_WEBHOOK_CONCURRENCY`).
    pub concurrency: usize,
    /// Of those, how many may be large (over [`LARGE_BODY`]).
    pub large: usize,
    /// How long a request waits for its turn before it is answered 503.
    pub wait: Duration,
    /// Of the slots, how many the requests of one client may hold at once.
    pub per_client: usize,
    /// How long a body may take on top of what [`MIN_BODY_RATE`] allows.
    pub body_grace: Duration,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        WebhookLimits {
            concurrency: DEFAULT_CONCURRENCY,
            large: LARGE_AT_ONCE,
            wait: ADMISSION_WAIT,
            per_client: DEFAULT_PER_CLIENT,
            body_grace: BODY_GRACE,
        }
    }
}

/// Who sent a request, as the failure throttle counts clients (an IPv4
/// address, an IPv6 /64): set on the request by the router, which knows
/// whether to trust a proxy's `X-Forwarded-For`. A request without one (an
/// in-process call) is held to no bound per client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sender(pub IpAddr);

/// The slots of each client that holds or waits for one; a client's entry
/// goes once it holds and awaits none.
type Clients = Arc<Mutex<HashMap<Sender, Arc<Semaphore>>>>;

/// The slots, shared by every request of the route.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    large: Arc<Semaphore>,
    clients: Clients,
    limits: WebhookLimits,
}

/// A request's turn: while it is held, its body may be read and verified.
#[derive(Debug)]
pub struct Turn {
    _slot: OwnedSemaphorePermit,
    _large: Option<OwnedSemaphorePermit>,
    _client: Option<ClientSlot>,
    deadline: Duration,
}

impl Turn {
    /// How long the body may take to arrive, from the turn on.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }
}

/// One of a client's slots; given back (and the client forgotten when it
/// was its last) on drop.
#[derive(Debug)]
struct ClientSlot {
    sender: Sender,
    clients: Clients,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.permit.take());
        // The map's reference alone: nobody holds or awaits this client's
        // slots, and nobody can start to while the lock is held.
        if clients
            .get(&self.sender)
            .is_some_and(|slots| Arc::strong_count(slots) == 1)
        {
            clients.remove(&self.sender);
        }
    }
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
            clients: Arc::default(),
            limits,
        }
    }

    /// Waits for a turn to read a body of `declared` bytes (`None`: not
    /// declared) sent by `sender`: first for one of that client's slots,
    /// then for a large body's place, then for a slot.
    pub async fn admit(&self, declared: Option<u64>, sender: Option<Sender>) -> Result<Turn, Busy> {
        let wait = self.limits.wait;
        let busy = Busy {
            retry_after: wait.max(Duration::from_secs(1)),
        };
        let is_large = declared.is_none_or(|length| length > LARGE_BODY);
        let take = async {
            let client = match sender {
                Some(sender) => Some(self.client_slot(sender).await?),
                None => None,
            };
            let large = match is_large {
                true => Some(self.large.clone().acquire_owned().await),
                false => None,
            };
            let slot = self.slots.clone().acquire_owned().await;
            match (large.transpose(), slot) {
                (Ok(large), Ok(slot)) => Ok(Turn {
                    _slot: slot,
                    _large: large,
                    _client: client,
                    deadline: self.deadline(declared),
                }),
                // The semaphores are never closed.
                _ => Err(busy),
            }
        };
        tokio::time::timeout(wait, take).await.unwrap_or(Err(busy))
    }

    /// One of `sender`'s slots, once it has one free.
    async fn client_slot(&self, sender: Sender) -> Result<ClientSlot, Busy> {
        // Declared first, so dropped last, after the `slots` below, even
        // when the wait is cut short: its drop then forgets the client.
        let mut slot = ClientSlot {
            sender,
            clients: self.clients.clone(),
            permit: None,
        };
        let slots = {
            let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
            let per_client = self.limits.per_client.max(1);
            clients
                .entry(sender)
                .or_insert_with(|| Arc::new(Semaphore::new(per_client)))
                .clone()
        };
        let permit = slots.acquire_owned().await.map_err(|_| Busy {
            retry_after: self.limits.wait.max(Duration::from_secs(1)),
        })?;
        slot.permit = Some(permit);
        Ok(slot)
    }

    /// How long a body of `declared` bytes may take to arrive (one of
    /// undeclared length may grow to the 25 MiB limit).
    fn deadline(&self, declared: Option<u64>) -> Duration {
        let bytes = declared.unwrap_or(super::body::MAX_BODY_BYTES as u64);
        self.limits.body_grace + Duration::from_secs_f64(bytes as f64 / MIN_BODY_RATE as f64)
    }

    /// Slots free right now.
    pub fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }

    /// Clients holding or awaiting a slot right now.
    pub fn clients(&self) -> usize {
        self.clients.lock().map_or(0, |c| c.len())
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
            ..WebhookLimits::default()
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
        let first = admission.admit(SMALL, None).await;
        let second = admission.admit(SMALL, None).await;
        assert!(first.is_ok() && second.is_ok());
        let started = tokio::time::Instant::now();
        let third = admission.admit(SMALL, None).await;
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
        let first = admission.admit(SMALL, None).await;
        assert!(first.is_ok());
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(SMALL, None).await.is_ok() }
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
        let one = admission.admit(LARGE, None).await;
        let two = admission.admit(None, None).await;
        assert!(one.is_ok() && two.is_ok());
        let third_large = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(Some(LARGE_BODY + 1), None).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The waiting large body holds no slot: 30 small ones still pass.
        assert_eq!(admission.free_slots(), 30);
        let small: Vec<_> = futures_util::future::join_all(
            (0..30).map(|_| admission.admit(Some(LARGE_BODY), None)),
        )
        .await;
        assert!(small.iter().all(Result::is_ok));
        drop(small);
        drop(one);
        assert!(matches!(third_large.await, Ok(true)));
    }

    fn sender(text: &str) -> Option<Sender> {
        text.parse().ok().map(Sender)
    }

    #[tokio::test(start_paused = true)]
    async fn one_client_past_its_share_should_wait_while_another_passes() {
        let admission = Arc::new(Admission::new(WebhookLimits {
            per_client: 2,
            ..limits(4, 2)
        }));
        let slow = sender("192.0.2.1");
        let held = vec![
            admission.admit(SMALL, slow).await,
            admission.admit(SMALL, slow).await,
        ];
        assert!(held.iter().all(Result::is_ok));
        let third = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(SMALL, slow).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        // The third of that client waits for one of its own, not a slot.
        assert_eq!(admission.free_slots(), 2);
        assert!(admission.admit(SMALL, sender("192.0.2.2")).await.is_ok());
        drop(held);
        assert!(matches!(third.await, Ok(true)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_should_be_forgotten_once_it_holds_and_awaits_nothing() {
        let admission = Admission::new(WebhookLimits {
            per_client: 1,
            wait: Duration::from_secs(1),
            ..limits(4, 2)
        });
        let one = sender("192.0.2.1");
        let turn = admission.admit(SMALL, one).await;
        assert!(turn.is_ok());
        assert_eq!(admission.clients(), 1);
        // A second of the same client waits its whole wait, then gives up.
        assert!(admission.admit(SMALL, one).await.is_err());
        assert_eq!(admission.clients(), 1);
        drop(turn);
        assert_eq!(admission.clients(), 0);
        assert_eq!(admission.free_slots(), 4);
    }

    #[test]
    fn a_body_should_get_its_grace_and_a_second_per_mib_it_declares() {
        let admission = Admission::new(WebhookLimits::default());
        assert_eq!(admission.deadline(Some(0)), BODY_GRACE);
        assert_eq!(
            admission.deadline(Some(25 * MIN_BODY_RATE)),
            BODY_GRACE + Duration::from_secs(25)
        );
        assert_eq!(
            admission.deadline(None),
            admission.deadline(Some(super::super::body::MAX_BODY_BYTES as u64))
        );
    }
}
