//! The guarantees every [`WorkQueue`] must keep, as executable checks.
//!
//! Each `pub async fn` proves one guarantee of [`super::queue`] on a fresh,
//! empty backing store reached through a [`QueueHarness`]; it panics, like an
//! assertion, when the guarantee is broken. The in-memory queue runs them on
//! tokio's paused clock, the PostgreSQL queue on the real clock with a short
//! lease: every wait is a condition polled until a deadline (instant under a
//! paused clock), never a fixed sleep that hopes the work is done.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{sleep, timeout, Instant};

use super::queue::{Claim, Enqueue, ListingSchedule, QueueError, Trigger, WorkQueue};

/// Opens handles on one backing store, for the checks below.
pub trait QueueHarness: Send + Sync {
    type Q: WorkQueue<Key: From<u32>> + ListingSchedule;

    /// A new handle on the same backing store, standing for another replica
    /// or a reconnect after a crash.
    fn open(&self) -> impl Future<Output = Self::Q> + Send;

    /// The lease the store's handles give a claim.
    fn lease(&self) -> Duration;
}

type KeyOf<H> = <<H as QueueHarness>::Q as WorkQueue>::Key;

/// Slack for waits whose length the guarantee does not fix (a slow server).
const PATIENCE: Duration = Duration::from_secs(10);
/// How often a condition is checked again while waiting for it.
const POLL: Duration = Duration::from_millis(10);
/// A delay long enough never to pass during a check.
const FOREVER: Duration = Duration::from_secs(3600);

/// Runs every check, each on a fresh store from `new_harness`.
pub async fn run_all<H, F, Fut>(new_harness: F)
where
    H: QueueHarness,
    F: Fn() -> Fut,
    Fut: Future<Output = H>,
{
    dedup(&new_harness().await).await;
    exclusive(&new_harness().await).await;
    exclusive_under_contention(&new_harness().await).await;
    no_lost_wakeup(&new_harness().await).await;
    retry(&new_harness().await).await;
    lease_expiry(&new_harness().await).await;
    renew_keeps_claim(&new_harness().await).await;
    release(&new_harness().await).await;
    hints(&new_harness().await).await;
    triggers(&new_harness().await).await;
    durability(&new_harness().await).await;
    depth(&new_harness().await).await;
    listing_once_per_interval(&new_harness().await).await;
    listing_on_request(&new_harness().await).await;
    changed_wakes(&new_harness().await).await;
}

/// A key enqueued five times before it is claimed is claimed once.
pub async fn dedup<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    for _ in 0..5 {
        ok(q.enqueue(vec![fresh(1)]).await, "enqueue");
    }
    ok(
        q.enqueue(vec![fresh(1), fresh(1)]).await,
        "enqueue a batch with a repeated key",
    );
    let claim = claim_now(&q, "w1").await;
    assert_eq!(claim.key, key(1));
    assert_eq!(claim.attempts, 0);
    assert_nothing_ready(&q, "after the only key was claimed").await;
    ok(q.done(&claim).await, "done");
    assert_nothing_ready(&q, "after the only key was done").await;
    assert_eq!(ok(q.depth().await, "depth"), 0);
}

/// A claimed key cannot be claimed again, through the same handle or
/// another one on the same store, while other keys can.
pub async fn exclusive<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    ok(a.enqueue(vec![fresh(1), fresh(2)]).await, "enqueue");
    let first = claim_now(&a, "a").await;
    let second = claim_now(&b, "b").await;
    assert_ne!(first.key, second.key, "one key was claimed twice");
    assert_nothing_ready(&a, "while both keys are claimed").await;
    assert_nothing_ready(&b, "while both keys are claimed").await;

    ok(
        a.enqueue(vec![fresh(1), fresh(2), fresh(3)]).await,
        "enqueue again",
    );
    let third = claim_now(&b, "b").await;
    assert_eq!(third.key, key(3), "only the unclaimed key may be claimed");
    assert_nothing_ready(&a, "while every key is claimed").await;
    assert_nothing_ready(&b, "while every key is claimed").await;
}

/// Many workers on two handles claim many keys at once: no key is ever held
/// by two of them, and every key is handled.
pub async fn exclusive_under_contention<H: QueueHarness>(h: &H) {
    const KEYS: u32 = 200;
    const WORKERS: usize = 8;
    let handles = [Arc::new(h.open().await), Arc::new(h.open().await)];
    let items = (0..KEYS).map(fresh).collect();
    ok(handles[0].enqueue(items).await, "enqueue");

    // Key -> when its current holder started to claim it.
    let held: Arc<Mutex<HashMap<KeyOf<H>, Instant>>> = Arc::default();
    let handled: Arc<Mutex<Vec<KeyOf<H>>>> = Arc::default();
    let lease = h.lease();
    let mut workers = JoinSet::new();
    for w in 0..WORKERS {
        let q = Arc::clone(&handles[w % handles.len()]);
        let (held, handled) = (Arc::clone(&held), Arc::clone(&handled));
        workers.spawn(async move {
            let name = format!("worker-{w}");
            loop {
                let started = Instant::now();
                let Some(claim) = ok(q.claim(&name).await, "claim") else {
                    break;
                };
                {
                    let mut held = lock(&held);
                    if let Some(other) = held.get(&claim.key) {
                        // A second claim is legitimate only once the first
                        // holder's lease may have run out.
                        assert!(
                            other.elapsed() > lease,
                            "key {} claimed by two workers at once",
                            claim.key
                        );
                    }
                    held.insert(claim.key.clone(), started);
                }
                // Nobody may have taken the key over while we held it.
                let kept = ok(q.renew(&claim).await, "renew");
                assert!(
                    kept || started.elapsed() > lease,
                    "the claim on {} was lost within its lease",
                    claim.key
                );
                lock(&held).remove(&claim.key);
                lock(&handled).push(claim.key.clone());
                ok(q.done(&claim).await, "done");
            }
        });
    }
    while let Some(joined) = workers.join_next().await {
        if let Err(e) = joined {
            std::panic::resume_unwind(e.into_panic());
        }
    }
    let mut handled = lock(&handled).clone();
    handled.sort();
    handled.dedup();
    assert_eq!(handled.len(), KEYS as usize, "some keys were never handled");
    assert_eq!(ok(handles[1].depth().await, "depth"), 0);
}

/// A key enqueued while claimed is ready again once the claim is done, with
/// its attempts reset; without a new enqueue, done forgets it.
pub async fn no_lost_wakeup<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    ok(a.enqueue(vec![fresh(1)]).await, "enqueue");
    let first = claim_now(&a, "a").await;
    ok(a.fail(&first, "boom", Duration::ZERO).await, "fail");
    let second = claim_within(&a, "a", PATIENCE).await;
    assert_eq!(second.attempts, 1);

    ok(b.enqueue(vec![fresh(1)]).await, "enqueue while claimed");
    assert_nothing_ready(&b, "while the key is claimed").await;
    let status = ok(a.status(&key(1)).await, "status").expect("the claimed key is known");
    assert!(status.claimed);

    ok(a.done(&second).await, "done");
    let status = ok(b.status(&key(1)).await, "status").expect("the key is still queued");
    assert_eq!(
        (status.attempts, status.last_error, status.claimed),
        (0, None, false)
    );
    let third = claim_now(&b, "b").await;
    assert_eq!((third.key.clone(), third.attempts), (key(1), 0));

    ok(b.done(&third).await, "done");
    assert_nothing_ready(&a, "after done without a new enqueue").await;
    assert_eq!(ok(a.status(&key(1)).await, "status"), None);
}

/// Failures count, keep the error and hide the key for their delay; a fresh
/// enqueue makes a failed key ready at once but keeps its attempts.
pub async fn retry<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    let (d1, d2) = (h.lease(), h.lease() * 2);
    ok(q.enqueue(vec![fresh(1)]).await, "enqueue");

    let claim = claim_now(&q, "w").await;
    let failed_at = Instant::now();
    ok(q.fail(&claim, "first", d1).await, "fail");
    assert_nothing_ready(&q, "right after a failure").await;
    let claim = claim_within(&q, "w", d1 + PATIENCE).await;
    assert!(
        failed_at.elapsed() >= d1,
        "claimed before its delay of {d1:?}"
    );
    assert_eq!(claim.attempts, 1);

    let failed_at = Instant::now();
    ok(q.fail(&claim, "second", d2).await, "fail");
    let status = ok(q.status(&key(1)).await, "status").expect("a failed key is kept");
    assert_eq!(status.attempts, 2);
    assert_eq!(status.last_error.as_deref(), Some("second"));
    assert!(!status.claimed);
    assert!(
        status.ready_in > Duration::ZERO && status.ready_in <= d2,
        "{status:?}"
    );
    assert_nothing_ready(&q, "right after a second failure").await;
    let claim = claim_within(&q, "w", d2 + PATIENCE).await;
    assert!(
        failed_at.elapsed() >= d2,
        "claimed before its delay of {d2:?}"
    );
    assert_eq!(claim.attempts, 2);

    ok(q.fail(&claim, "third", FOREVER).await, "fail");
    ok(q.enqueue(vec![fresh(1)]).await, "enqueue a failed key");
    let claim = claim_now(&q, "w").await;
    assert_eq!(claim.attempts, 3, "a fresh enqueue must keep the attempts");
    ok(q.done(&claim).await, "done");
    assert_eq!(ok(q.status(&key(1)).await, "status"), None);
}

/// A claim never renewed is given up after the lease: another handle claims
/// the key, and the stale holder can neither renew nor end the new claim.
pub async fn lease_expiry<H: QueueHarness>(h: &H) {
    let crashed = h.open().await;
    let survivor = h.open().await;
    ok(crashed.enqueue(vec![fresh(1)]).await, "enqueue");
    let started = Instant::now();
    let stale = claim_now(&crashed, "crashed").await;
    assert_nothing_ready(&survivor, "while the lease is live").await;

    let live = claim_within(&survivor, "survivor", h.lease() + PATIENCE).await;
    assert!(
        started.elapsed() >= h.lease(),
        "claimed again before the lease ran out"
    );
    assert_eq!(live.key, stale.key);
    assert_ne!(live.token, stale.token, "a new claim needs a new token");

    assert!(
        !ok(crashed.renew(&stale).await, "renew"),
        "a stale claim was renewed"
    );
    ok(crashed.done(&stale).await, "stale done");
    ok(crashed.fail(&stale, "stale", FOREVER).await, "stale fail");
    ok(crashed.release(&stale).await, "stale release");
    let status = ok(survivor.status(&key(1)).await, "status").expect("the stale holder deleted it");
    assert!(status.claimed, "the stale holder ended the new claim");
    assert_eq!((status.attempts, status.last_error), (0, None));
    assert!(
        ok(survivor.renew(&live).await, "renew"),
        "the live claim was lost"
    );
    ok(survivor.done(&live).await, "done");
    assert_eq!(ok(survivor.status(&key(1)).await, "status"), None);
}

/// A claim renewed well within each lease stays exclusive past the lease.
pub async fn renew_keeps_claim<H: QueueHarness>(h: &H) {
    let holder = h.open().await;
    let other = h.open().await;
    ok(holder.enqueue(vec![fresh(1)]).await, "enqueue");
    let claim = claim_now(&holder, "holder").await;
    let until = Instant::now() + h.lease() * 3;
    while Instant::now() < until {
        sleep(h.lease() / 4).await;
        assert!(
            ok(holder.renew(&claim).await, "renew"),
            "a renewed claim was lost"
        );
        assert_nothing_ready(&other, "while the claim is renewed").await;
    }
    ok(holder.done(&claim).await, "done");
    assert_eq!(ok(other.depth().await, "depth"), 0);
}

/// A released key is ready at once, untouched: same attempts, same hint.
pub async fn release<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    ok(a.enqueue(vec![hinted(1, b"v1")]).await, "enqueue");
    let claim = claim_now(&a, "a").await;
    ok(a.fail(&claim, "boom", Duration::ZERO).await, "fail");
    let claim = claim_within(&a, "a", PATIENCE).await;
    ok(a.release(&claim).await, "release");
    let again = claim_now(&b, "b").await;
    assert_eq!(again.key, key(1));
    assert_eq!(again.attempts, 1);
    assert_eq!(again.hint.as_deref(), Some(&b"v1"[..]));
    ok(b.done(&again).await, "done");
}

/// A hint reaches the worker only while no trigger without a hint is pending.
pub async fn hints<H: QueueHarness>(h: &H) {
    let q = h.open().await;

    ok(
        q.enqueue(vec![hinted(1, b"a")]).await,
        "enqueue with a hint",
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(claim.hint.as_deref(), Some(&b"a"[..]), "the hint was lost");
    ok(q.done(&claim).await, "done");

    ok(
        q.enqueue(vec![hinted(2, b"a"), hinted(2, b"b")]).await,
        "enqueue two hints",
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(
        claim.hint.as_deref(),
        Some(&b"b"[..]),
        "the newer hint must win"
    );
    ok(q.done(&claim).await, "done");

    ok(
        q.enqueue(vec![hinted(3, b"a")]).await,
        "enqueue with a hint",
    );
    ok(q.enqueue(vec![fresh(3)]).await, "enqueue fresh");
    let claim = claim_now(&q, "w").await;
    assert_eq!(claim.hint, None, "a fresh trigger must drop the hint");
    ok(q.done(&claim).await, "done");

    ok(q.enqueue(vec![fresh(4)]).await, "enqueue fresh");
    ok(
        q.enqueue(vec![hinted(4, b"a")]).await,
        "enqueue with a hint",
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(
        claim.hint, None,
        "a hint must not cover a pending fresh trigger"
    );
    ok(q.done(&claim).await, "done");

    ok(
        q.enqueue(vec![hinted(5, b"old")]).await,
        "enqueue with a hint",
    );
    let claim = claim_now(&q, "w").await;
    ok(
        q.enqueue(vec![hinted(5, b"new")]).await,
        "enqueue with a hint while claimed",
    );
    ok(q.done(&claim).await, "done");
    let claim = claim_now(&q, "w").await;
    // The run in flight may have read newer state than a listing fetched
    // earlier, so the rerun reads afresh instead of trusting the hint.
    assert_eq!(
        claim.hint, None,
        "a hint that arrived during a claim must not steer the rerun"
    );

    ok(
        q.enqueue(vec![fresh(5)]).await,
        "enqueue fresh while claimed",
    );
    ok(
        q.enqueue(vec![hinted(5, b"newer")]).await,
        "enqueue with a hint while claimed",
    );
    ok(q.done(&claim).await, "done");
    let claim = claim_now(&q, "w").await;
    assert_eq!(
        claim.hint, None,
        "a hint must not cover a fresh trigger during a claim"
    );
    ok(q.done(&claim).await, "done");
    assert_eq!(ok(q.depth().await, "depth"), 0);
}

/// A claim says what asked for its run: of the triggers that waited for
/// it, the most telling; one that arrived during a claim belongs to the
/// run after it, not to the one in flight; a failed run keeps its trigger.
pub async fn triggers<H: QueueHarness>(h: &H) {
    let q = h.open().await;

    ok(
        q.enqueue(vec![because(1, Trigger::Resync)]).await,
        "enqueue",
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(claim.trigger, Trigger::Resync, "the trigger was lost");
    ok(q.done(&claim).await, "done");

    ok(
        q.enqueue(vec![
            because(2, Trigger::Listing),
            because(2, Trigger::Push),
        ])
        .await,
        "enqueue twice in one call",
    );
    ok(
        q.enqueue(vec![because(2, Trigger::Resync)]).await,
        "enqueue again",
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(
        claim.trigger,
        Trigger::Push,
        "the most telling trigger must win"
    );

    ok(
        q.enqueue(vec![because(2, Trigger::Listing)]).await,
        "enqueue while claimed",
    );
    ok(q.fail(&claim, "boom", Duration::ZERO).await, "fail");
    let claim = claim_within(&q, "w", Duration::from_secs(5)).await;
    assert_eq!(
        claim.trigger,
        Trigger::Listing,
        "a trigger that arrived during a claim must ask for the next run"
    );
    ok(q.fail(&claim, "boom", Duration::ZERO).await, "fail");
    let claim = claim_within(&q, "w", Duration::from_secs(5)).await;
    assert_eq!(
        claim.trigger,
        Trigger::Listing,
        "a retry must keep its trigger"
    );

    ok(
        q.enqueue(vec![because(2, Trigger::Event)]).await,
        "enqueue while claimed",
    );
    ok(
        q.enqueue(vec![because(2, Trigger::Other)]).await,
        "and again",
    );
    ok(q.done(&claim).await, "done");
    let claim = claim_now(&q, "w").await;
    assert_eq!(
        claim.trigger,
        Trigger::Event,
        "triggers that arrived during one claim must merge as when waiting"
    );
    ok(q.done(&claim).await, "done");
    assert_eq!(ok(q.depth().await, "depth"), 0);
}

/// What one handle enqueued or recorded is there for the next handle after
/// the first is gone (a restart).
pub async fn durability<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    ok(q.enqueue(vec![hinted(1, b"h"), fresh(2)]).await, "enqueue");
    let (first, second) = (claim_now(&q, "w").await, claim_now(&q, "w").await);
    let (claim, other) = if first.key == key(2) {
        (first, second)
    } else {
        (second, first)
    };
    ok(q.release(&other).await, "release");
    ok(q.fail(&claim, "broken", FOREVER).await, "fail");
    drop(q);

    let q = h.open().await;
    assert_eq!(ok(q.depth().await, "depth"), 2);
    let failed = ok(q.status(&key(2)).await, "status").expect("a failed key was lost");
    assert_eq!(
        (failed.attempts, failed.last_error.as_deref()),
        (1, Some("broken"))
    );
    let claim = claim_now(&q, "w").await;
    assert_eq!(claim.key, key(1));
    assert_eq!(claim.hint.as_deref(), Some(&b"h"[..]));
}

/// Depth counts every key waiting (ready or not) or claimed, on any handle.
pub async fn depth<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    assert_eq!(ok(a.depth().await, "depth"), 0);
    ok(
        a.enqueue(vec![fresh(1), fresh(2), fresh(3), fresh(1)])
            .await,
        "enqueue",
    );
    assert_eq!(ok(b.depth().await, "depth"), 3);
    let first = claim_now(&a, "a").await;
    assert_eq!(
        ok(b.depth().await, "depth"),
        3,
        "a claimed key still counts"
    );
    ok(a.fail(&first, "boom", FOREVER).await, "fail");
    assert_eq!(
        ok(b.depth().await, "depth"),
        3,
        "a key waiting to retry still counts"
    );
    let second = claim_now(&b, "b").await;
    ok(b.done(&second).await, "done");
    assert_eq!(ok(a.depth().await, "depth"), 2);
}

/// Across handles, a listing is taken once per interval.
pub async fn listing_once_per_interval<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    let interval = h.lease() * 2;
    let started = Instant::now();
    assert!(
        ok(a.take_listing(interval).await, "take"),
        "the first listing is due"
    );
    assert!(
        !ok(b.take_listing(interval).await, "take"),
        "taken twice in one interval"
    );
    assert!(
        !ok(a.take_listing(interval).await, "take"),
        "taken twice in one interval"
    );

    let deadline = Instant::now() + interval + PATIENCE;
    while !ok(b.take_listing(interval).await, "take") {
        assert!(Instant::now() < deadline, "the next listing never came due");
        sleep(POLL).await;
    }
    assert!(
        started.elapsed() >= interval,
        "taken again before the interval"
    );
    assert!(
        !ok(a.take_listing(interval).await, "take"),
        "taken twice in one interval"
    );
}

/// A requested listing is due at once on any handle, and only once.
pub async fn listing_on_request<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    assert!(
        ok(a.take_listing(FOREVER).await, "take"),
        "the first listing is due"
    );
    assert!(!ok(b.take_listing(FOREVER).await, "take"));
    ok(b.request_listing().await, "request");
    assert!(
        ok(a.take_listing(FOREVER).await, "take"),
        "a requested listing must be due"
    );
    assert!(
        !ok(b.take_listing(FOREVER).await, "take"),
        "one request, one listing"
    );
}

/// `changed` resolves after an enqueue through another handle.
pub async fn changed_wakes<H: QueueHarness>(h: &H) {
    let idle = h.open().await;
    let other = h.open().await;
    let changed = idle.changed();
    tokio::pin!(changed);
    // The first enqueues may come before the waiter listens (a wake-up may
    // be missed); keep enqueueing until one is seen.
    let deadline = Instant::now() + PATIENCE;
    let mut n = 0;
    loop {
        ok(other.enqueue(vec![fresh(n)]).await, "enqueue");
        if timeout(Duration::from_millis(100), &mut changed)
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "changed() never woke after enqueues"
        );
        n += 1;
    }
}

fn key<K: From<u32>>(n: u32) -> K {
    K::from(n)
}

fn fresh<K: From<u32>>(n: u32) -> Enqueue<K> {
    Enqueue::fresh(K::from(n))
}

fn because<K: From<u32>>(n: u32, trigger: Trigger) -> Enqueue<K> {
    Enqueue::because(K::from(n), trigger)
}

fn hinted<K: From<u32>>(n: u32, hint: &[u8]) -> Enqueue<K> {
    Enqueue {
        key: K::from(n),
        hint: Some(hint.to_vec()),
        trigger: Trigger::Listing,
    }
}

fn ok<T>(result: Result<T, QueueError>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what} failed: {e}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn claim_now<Q: WorkQueue>(q: &Q, worker: &str) -> Claim<Q::Key> {
    ok(q.claim(worker).await, "claim").unwrap_or_else(|| panic!("{worker}: nothing was ready"))
}

async fn claim_within<Q: WorkQueue>(q: &Q, worker: &str, limit: Duration) -> Claim<Q::Key> {
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

async fn assert_nothing_ready<Q: WorkQueue>(q: &Q, when: &str) {
    if let Some(claim) = ok(q.claim("intruder").await, "claim") {
        panic!("{} was claimable {when}", claim.key);
    }
}
