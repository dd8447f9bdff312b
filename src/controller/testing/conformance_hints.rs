//! The queue's guarantees about what a claim carries besides its key: the
//! listing's hint and the trigger of the run (see [`super::conformance`]).

use std::time::Duration;

use super::conformance_kit::{because, claim_now, claim_within, fresh, hinted, ok, QueueHarness};
use crate::controller::queue::{Trigger, WorkQueue};

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
    // A listing's answer that arrived while the key ran steers the rerun:
    // whether the run in flight applied something newer than it is the
    // storage's to tell (the registry's `observed_at`), as for any hint.
    assert_eq!(
        claim.hint.as_deref(),
        Some(&b"new"[..]),
        "a hint that arrived during a claim must steer the rerun"
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
