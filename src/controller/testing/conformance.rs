//! The guarantees every [`WorkQueue`] must keep, as executable checks.
//!
//! Each `pub async fn` proves one guarantee of [`super::queue`] on a fresh,
//! empty backing store reached through a [`QueueHarness`]; it panics, like an
//! assertion, when the guarantee is broken. The in-memory queue runs them on
//! tokio's paused clock, the PostgreSQL queue on the real clock with a short
//! lease: every wait is a condition polled until a deadline (instant under a
//! paused clock), never a fixed sleep that hopes the work is done.

use std::future::Future;
use std::time::Duration;

use tokio::time::{sleep, Instant};

use crate::controller::queue::WorkQueue;

pub use super::conformance_kit::QueueHarness;
use super::conformance_kit::*;

pub use super::conformance_batch::{
    claim_many_dedup, claim_many_exclusive, defer_waits_without_counting, done_many_no_lost_wakeup,
    lost_leases_in_a_batch, renew_many_keeps_claims,
};
pub use super::conformance_durability::{depth, durability};
pub use super::conformance_hints::{hints, triggers};
pub use super::conformance_listing::{
    changed_wakes, listing_on_request, listing_once_per_interval,
};
pub use super::conformance_order::claim_order;

/// Runs every check, the batch methods' too, each on a fresh store from
/// `new_harness`.
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
    claim_order(&new_harness().await).await;
    claim_many_dedup(&new_harness().await).await;
    claim_many_exclusive(&new_harness().await).await;
    done_many_no_lost_wakeup(&new_harness().await).await;
    lost_leases_in_a_batch(&new_harness().await).await;
    renew_many_keeps_claims(&new_harness().await).await;
    defer_waits_without_counting(&new_harness().await).await;
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
    contend(h, 200, 8, |_| Take::One).await;
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
