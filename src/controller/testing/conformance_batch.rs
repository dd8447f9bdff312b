//! The guarantees of [`super::conformance`], kept by the batch methods
//! (`claim_many`, `renew_many`, `done_many`) and by `defer`.
//!
//! Each check runs on a fresh store through the same [`QueueHarness`] and,
//! like the main suite, waits only on conditions polled until a deadline.
//! A batch is many ordinary claims: every key in it must behave exactly as
//! if it had been claimed and ended alone.

use std::time::Duration;

use tokio::time::{sleep, Instant};

use super::conformance_kit::{
    contend, fresh, hinted, key, ok, KeyOf, QueueHarness, Take, FOREVER, PATIENCE, POLL,
};
use crate::controller::queue::{Claim, WorkQueue};

/// `claim_many` takes each ready key once, at most `max` at a time, and
/// never a key that waits out a failure.
pub async fn claim_many_dedup<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    for _ in 0..3 {
        ok(
            q.enqueue(vec![fresh(1), fresh(2), fresh(2), fresh(3)])
                .await,
            "enqueue",
        );
    }
    let claimed_at = Instant::now();
    let claims = ok(q.claim_many("w", 10).await, "claim_many");
    let mut keys: Vec<KeyOf<H>> = claims.iter().map(|c| c.key.clone()).collect();
    keys.sort();
    assert_eq!(keys, vec![key(1), key(2), key(3)], "each key once");
    assert_none_ready_within(&q, claimed_at, h.lease(), "while every key is claimed").await;
    if claimed_at.elapsed() >= h.lease() {
        // Too slow a store to tell a second claim from an expired lease.
        return;
    }
    ok(q.fail(&claims[0], "boom", FOREVER).await, "fail");
    ok(q.done_many(&claims[1..]).await, "done_many");

    ok(
        q.enqueue(vec![fresh(4), fresh(5), fresh(6)]).await,
        "enqueue",
    );
    let two = ok(q.claim_many("w", 2).await, "claim_many");
    assert_eq!(two.len(), 2, "at most max keys");
    let rest = ok(q.claim_many("w", 10).await, "claim_many");
    assert!(!rest.is_empty(), "the third key was not claimed");
    let mut later: Vec<KeyOf<H>> = two.iter().chain(&rest).map(|c| c.key.clone()).collect();
    later.sort();
    later.dedup();
    assert_eq!(later, vec![key(4), key(5), key(6)]);
    let batch: Vec<Claim<KeyOf<H>>> = two.into_iter().chain(rest).collect();
    ok(q.done_many(&batch).await, "done_many");

    // Only the failed key is left, hidden for its delay.
    assert_none_ready(&q, "while the last key waits out its failure").await;
    assert_eq!(ok(q.depth().await, "depth"), 1);
    assert!(ok(q.claim_many("w", 0).await, "claim_many").is_empty());
}

/// Workers on two handles claim batches (and single keys) concurrently: no
/// key is ever held twice, and every key is handled.
pub async fn claim_many_exclusive<H: QueueHarness>(h: &H) {
    // One worker in three takes single claims beside the batches.
    contend(h, 300, 6, |w| Take::Many(if w % 3 == 0 { 1 } else { 16 })).await;
}

/// `done_many` forgets the keys of the batch, except those enqueued while
/// claimed: they are ready again at once, with attempts reset and without
/// a hint (the run in flight may have read newer state than the hint).
pub async fn done_many_no_lost_wakeup<H: QueueHarness>(h: &H) {
    let a = h.open().await;
    let b = h.open().await;
    ok(
        a.enqueue(vec![hinted(1, b"h"), fresh(2), fresh(3)]).await,
        "enqueue",
    );
    let claims = ok(a.claim_many("a", 10).await, "claim_many");
    assert_eq!(claims.len(), 3);
    let one = claims
        .iter()
        .find(|c| c.key == key(1))
        .expect("key 1 claimed");
    assert_eq!(one.hint.as_deref(), Some(&b"h"[..]), "the hint was lost");
    ok(a.fail(one, "boom", Duration::ZERO).await, "fail");
    let deadline = Instant::now() + PATIENCE;
    let retried = loop {
        let got = ok(a.claim_many("a", 10).await, "claim_many");
        if !got.is_empty() {
            break got;
        }
        assert!(Instant::now() < deadline, "the failed key never came back");
        sleep(POLL).await;
    };
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].attempts, 1);
    let batch: Vec<Claim<KeyOf<H>>> = claims
        .iter()
        .filter(|c| c.key != key(1))
        .cloned()
        .chain(retried)
        .collect();

    let enqueued_at = Instant::now();
    ok(
        b.enqueue(vec![fresh(1), hinted(3, b"newer")]).await,
        "enqueue while claimed",
    );
    if enqueued_at.elapsed() >= h.lease() {
        // Too slow a store to tell a rerun from an expired lease.
        return;
    }
    ok(a.done_many(&batch).await, "done_many");

    assert_eq!(ok(b.status(&key(2)).await, "status"), None, "2 is done");
    let status = ok(b.status(&key(1)).await, "status").expect("1 runs again");
    assert_eq!(
        (status.attempts, status.last_error, status.claimed),
        (0, None, false)
    );
    let again = ok(b.claim_many("b", 10).await, "claim_many");
    let mut keys: Vec<KeyOf<H>> = again.iter().map(|c| c.key.clone()).collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![key(1), key(3)],
        "the keys enqueued while claimed"
    );
    let hint_of = |k| {
        again
            .iter()
            .find(|c| c.key == k)
            .and_then(|c| c.hint.as_deref())
    };
    let hints = vec![hint_of(key(1)), hint_of(key(3))];
    assert_eq!(
        hints,
        vec![None, Some(&b"newer"[..])],
        "a fresh trigger during a claim reads afresh; a hint steers the rerun"
    );
    ok(b.done_many(&again).await, "done_many");
    assert_eq!(ok(a.depth().await, "depth"), 0);
}

/// After its leases ran out and another handle took the keys, a stale
/// batch can neither renew nor end the new claims.
pub async fn lost_leases_in_a_batch<H: QueueHarness>(h: &H) {
    let crashed = h.open().await;
    let survivor = h.open().await;
    ok(crashed.enqueue(vec![fresh(1), fresh(2)]).await, "enqueue");
    let started = Instant::now();
    let stale = ok(crashed.claim_many("crashed", 10).await, "claim_many");
    assert_eq!(stale.len(), 2);
    let early = ok(survivor.claim_many("survivor", 10).await, "claim_many");
    assert!(
        early.is_empty() || started.elapsed() >= h.lease(),
        "claimed while the leases were live"
    );

    let deadline = Instant::now() + h.lease() + PATIENCE;
    let mut live = early;
    while live.len() < 2 {
        live.extend(ok(survivor.claim_many("survivor", 10).await, "claim_many"));
        assert!(
            Instant::now() < deadline,
            "the expired claims were not retaken"
        );
        if live.len() < 2 {
            sleep(POLL).await;
        }
    }
    assert!(
        started.elapsed() >= h.lease(),
        "claimed again before the lease ran out"
    );

    let kept = ok(crashed.renew_many(&stale).await, "renew_many");
    assert_eq!(kept, vec![false, false], "stale claims were renewed");
    ok(crashed.done_many(&stale).await, "stale done_many");
    for n in [1, 2] {
        let status = ok(survivor.status(&key(n)).await, "status").expect("still queued");
        assert!(status.claimed, "the stale batch ended the new claim on {n}");
    }
    let kept = ok(survivor.renew_many(&live).await, "renew_many");
    assert_eq!(kept, vec![true, true], "the live claims were lost");
    ok(survivor.done_many(&live).await, "done_many");
    assert_eq!(ok(survivor.depth().await, "depth"), 0);
}

/// Claims renewed together well within each lease stay exclusive past it.
pub async fn renew_many_keeps_claims<H: QueueHarness>(h: &H) {
    let holder = h.open().await;
    let other = h.open().await;
    ok(
        holder.enqueue(vec![fresh(1), fresh(2), fresh(3)]).await,
        "enqueue",
    );
    let claims = ok(holder.claim_many("holder", 10).await, "claim_many");
    assert_eq!(claims.len(), 3);
    let until = Instant::now() + h.lease() * 3;
    while Instant::now() < until {
        sleep(h.lease() / 4).await;
        let kept = ok(holder.renew_many(&claims).await, "renew_many");
        assert_eq!(kept, vec![true; 3], "a renewed claim was lost");
        assert_none_ready(&other, "while the claims are renewed").await;
    }
    ok(holder.done_many(&claims).await, "done_many");
    assert_eq!(ok(other.depth().await, "depth"), 0);
}

/// `defer` hides a key for its delay without counting an attempt or
/// touching the last error; a fresh enqueue makes it ready at once.
pub async fn defer_waits_without_counting<H: QueueHarness>(h: &H) {
    let q = h.open().await;
    let delay = h.lease();
    ok(q.enqueue(vec![fresh(1)]).await, "enqueue");
    let claim = claim_within(&q, Duration::ZERO).await;
    ok(q.fail(&claim, "boom", Duration::ZERO).await, "fail");
    let claim = claim_within(&q, PATIENCE).await;
    assert_eq!(claim.attempts, 1);

    let deferred_at = Instant::now();
    ok(q.defer(&claim, delay).await, "defer");
    let status = ok(q.status(&key(1)).await, "status").expect("a deferred key is kept");
    assert_eq!(
        (status.attempts, status.last_error.as_deref()),
        (1, Some("boom"))
    );
    assert!(!status.claimed);
    assert!(status.ready_in <= delay, "{status:?}");
    assert!(
        status.ready_in > Duration::ZERO || deferred_at.elapsed() >= delay,
        "{status:?}"
    );
    assert_none_ready_within(&q, deferred_at, delay, "right after a defer").await;
    let claim = claim_within(&q, delay + PATIENCE).await;
    assert!(
        deferred_at.elapsed() >= delay,
        "claimed before its delay of {delay:?}"
    );
    assert_eq!(claim.attempts, 1, "a defer must not count an attempt");

    ok(q.defer(&claim, FOREVER).await, "defer");
    ok(q.enqueue(vec![fresh(1)]).await, "enqueue a deferred key");
    let claim = claim_within(&q, Duration::ZERO).await;
    assert_eq!(claim.attempts, 1);
    ok(q.done_many(std::slice::from_ref(&claim)).await, "done_many");
    assert_eq!(ok(q.status(&key(1)).await, "status"), None);
}

/// The one key of `q`, claimed through `claim_many` within `limit`.
async fn claim_within<Q: WorkQueue>(q: &Q, limit: Duration) -> Claim<Q::Key> {
    let deadline = Instant::now() + limit;
    loop {
        let mut claims = ok(q.claim_many("w", 1).await, "claim_many");
        if let Some(claim) = claims.pop() {
            return claim;
        }
        assert!(
            Instant::now() <= deadline,
            "nothing became ready within {limit:?}"
        );
        sleep(POLL).await;
    }
}

async fn assert_none_ready<Q: WorkQueue>(q: &Q, when: &str) {
    assert_none_ready_within(q, Instant::now(), FOREVER, when).await;
}

/// Nothing is claimable while less than `bound` has passed since `since`
/// (a lease or a delay). A key claimed later than that, on a slow store, is
/// legitimate; it is given back so that the check can go on.
async fn assert_none_ready_within<Q: WorkQueue>(
    q: &Q,
    since: Instant,
    bound: Duration,
    when: &str,
) {
    let claims = ok(q.claim_many("intruder", 10).await, "claim_many");
    let Some(claim) = claims.first() else {
        return;
    };
    assert!(
        since.elapsed() >= bound,
        "{} was claimable {when}",
        claim.key
    );
    for claim in &claims {
        ok(q.release(claim).await, "release");
    }
}
