//! What a store keeps across handles: enqueued keys and recorded failures
//! survive a restart, and the depth counts every key on any handle (see
//! [`super::conformance`]).

use super::conformance_kit::{claim_now, fresh, hinted, key, ok, QueueHarness, FOREVER};
use crate::controller::queue::WorkQueue;

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
