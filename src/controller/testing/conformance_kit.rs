//! What the queue's conformance checks share: the harness a store plugs
//! in, the waits, and small helpers to enqueue and claim.

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{sleep, Instant};

use crate::controller::queue::{Claim, Enqueue, ListingSchedule, Trigger, WorkQueue};

/// Opens handles on one backing store, for the checks below.
pub trait QueueHarness: Send + Sync {
    type Q: WorkQueue<Key: From<u32>> + ListingSchedule;

    /// A new handle on the same backing store, standing for another replica
    /// or a reconnect after a crash.
    fn open(&self) -> impl Future<Output = Self::Q> + Send;

    /// The lease the store's handles give a claim.
    fn lease(&self) -> Duration;
}

pub(crate) type KeyOf<H> = <<H as QueueHarness>::Q as WorkQueue>::Key;

/// Slack for waits whose length the guarantee does not fix (a slow server).
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);
/// How often a condition is checked again while waiting for it.
pub(crate) const POLL: Duration = Duration::from_millis(10);
/// A delay long enough never to pass during a check.
pub(crate) const FOREVER: Duration = Duration::from_secs(3600);

pub(crate) fn key<K: From<u32>>(n: u32) -> K {
    K::from(n)
}

pub(crate) fn fresh<K: From<u32>>(n: u32) -> Enqueue<K> {
    Enqueue::fresh(K::from(n))
}

pub(crate) fn because<K: From<u32>>(n: u32, trigger: Trigger) -> Enqueue<K> {
    Enqueue::because(K::from(n), trigger)
}

pub(crate) fn hinted<K: From<u32>>(n: u32, hint: &[u8]) -> Enqueue<K> {
    Enqueue {
        key: K::from(n),
        hint: Some(hint.to_vec()),
        trigger: Trigger::Listing,
    }
}

pub(crate) fn ok<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what} failed: {e}"))
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) async fn claim_now<Q: WorkQueue>(q: &Q, worker: &str) -> Claim<Q::Key> {
    ok(q.claim(worker).await, "claim").unwrap_or_else(|| panic!("{worker}: nothing was ready"))
}

pub(crate) async fn claim_within<Q: WorkQueue>(
    q: &Q,
    worker: &str,
    limit: Duration,
) -> Claim<Q::Key> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(claim) = ok(q.claim(worker).await, "claim") {
            return claim;
        }
        assert!(
            Instant::now() < deadline,
            "{worker}: nothing became ready within {limit:?}"
        );
        sleep(POLL).await;
    }
}

pub(crate) async fn assert_nothing_ready<Q: WorkQueue>(q: &Q, when: &str) {
    if let Some(claim) = ok(q.claim("intruder").await, "claim") {
        panic!("{} was claimable {when}", claim.key);
    }
}

/// How a worker of [`contend`] takes keys: one claim at a time through the
/// single-key methods, or batches of at most `n` through the batch ones.
#[derive(Clone, Copy)]
pub(crate) enum Take {
    One,
    Many(usize),
}

/// Workers on two handles claim `keys` keys at once, each taking as `take`
/// says for its number: no key is ever held by two of them within a lease,
/// no claim is lost within its lease, and every key is handled.
pub(crate) async fn contend<H: QueueHarness>(
    h: &H,
    keys: u32,
    workers: usize,
    take: impl Fn(usize) -> Take,
) {
    let handles = [Arc::new(h.open().await), Arc::new(h.open().await)];
    ok(
        handles[0].enqueue((0..keys).map(fresh).collect()).await,
        "enqueue",
    );
    let holders = Arc::new(Holders::new(h.lease()));
    let mut running = JoinSet::new();
    for w in 0..workers {
        let q = Arc::clone(&handles[w % handles.len()]);
        let holders = Arc::clone(&holders);
        let take = take(w);
        running.spawn(async move {
            let name = format!("worker-{w}");
            loop {
                let started = Instant::now();
                let claims = match take {
                    Take::One => match ok(q.claim(&name).await, "claim") {
                        Some(claim) => vec![claim],
                        None => break,
                    },
                    Take::Many(max) => {
                        let claims = ok(q.claim_many(&name, max).await, "claim_many");
                        assert!(claims.len() <= max, "more than max claimed");
                        claims
                    }
                };
                if claims.is_empty() {
                    break;
                }
                holders.take(&claims, started);
                // Nobody may have taken a key over while we held it.
                let kept = match take {
                    Take::One => vec![ok(q.renew(&claims[0]).await, "renew")],
                    Take::Many(_) => ok(q.renew_many(&claims).await, "renew_many"),
                };
                holders.done(&claims, &kept, started);
                match take {
                    Take::One => ok(q.done(&claims[0]).await, "done"),
                    Take::Many(_) => ok(q.done_many(&claims).await, "done_many"),
                }
            }
        });
    }
    while let Some(joined) = running.join_next().await {
        if let Err(e) = joined {
            std::panic::resume_unwind(e.into_panic());
        }
    }
    let mut handled = lock(&holders.handled).clone();
    handled.sort();
    handled.dedup();
    assert_eq!(handled.len(), keys as usize, "some keys were never handled");
    assert_eq!(ok(handles[1].depth().await, "depth"), 0);
}

/// What the workers of [`contend`] share: which key is held since when,
/// and every key handled.
struct Holders<K> {
    held: Mutex<HashMap<K, Instant>>,
    handled: Mutex<Vec<K>>,
    lease: Duration,
}

impl<K: Clone + Eq + Hash + Display> Holders<K> {
    fn new(lease: Duration) -> Self {
        Self {
            held: Mutex::default(),
            handled: Mutex::default(),
            lease,
        }
    }

    /// Records `claims` as held since `started`: a key already held may be
    /// claimed again only once its holder's lease may have run out.
    fn take(&self, claims: &[Claim<K>], started: Instant) {
        let mut held = lock(&self.held);
        for claim in claims {
            if let Some(other) = held.get(&claim.key) {
                assert!(
                    other.elapsed() > self.lease,
                    "key {} claimed by two workers at once",
                    claim.key
                );
            }
            held.insert(claim.key.clone(), started);
        }
    }

    /// Checks that nobody took `claims` over while they were held (the
    /// answers of a renewal, in order), then records them handled.
    fn done(&self, claims: &[Claim<K>], kept: &[bool], started: Instant) {
        assert_eq!(kept.len(), claims.len());
        let (mut held, mut handled) = (lock(&self.held), lock(&self.handled));
        for (claim, kept) in claims.iter().zip(kept) {
            assert!(
                *kept || started.elapsed() > self.lease,
                "the claim on {} was lost within its lease",
                claim.key
            );
            held.remove(&claim.key);
            handled.push(claim.key.clone());
        }
    }
}
