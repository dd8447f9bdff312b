//! The listing schedule's guarantees, and the wake-up after an enqueue, on
//! every handle of one store (see [`super::conformance`]).

use std::time::Duration;

use tokio::time::{sleep, timeout, Instant};

use super::conformance_kit::{fresh, ok, QueueHarness, FOREVER, PATIENCE, POLL};
use crate::controller::queue::{ListingSchedule, WorkQueue};

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
