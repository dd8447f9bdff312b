//! The PostgreSQL queue against the conformance suite, on a real server
//! (`DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`), each
//! test on a fresh database, with a short lease on the real clock.

use crate::support::registry::queue_with;
use std::time::Duration;

use roster::controller::testing::conformance::{self, QueueHarness};
use roster::controller::testing::conformance_batch;
use roster::controller::{Enqueue, WorkQueue};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::source::RepoId;
use sqlx::postgres::PgPoolOptions;

const LEASE: Duration = Duration::from_millis(300);

/// Every `open` is a new pool on the same database: another replica, or the
/// same one after a restart.
struct Harness {
    url: String,
}

async fn harness() -> Harness {
    let (pool, url) = fresh_database().await.expect("a fresh database");
    pool.close().await;
    Harness { url }
}

impl QueueHarness for Harness {
    type Q = PgQueue;

    async fn open(&self) -> PgQueue {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&self.url)
            .await
            .expect("a connection to the test database");
        // Long enough that only a notification can wake `changed` in time.
        queue_with(&pool, LEASE).with_poll_interval(Duration::from_secs(60))
    }

    fn lease(&self) -> Duration {
        LEASE
    }
}

#[tokio::test]
async fn dedup_should_claim_an_id_once() {
    conformance::dedup(&harness().await).await;
}

#[tokio::test]
async fn a_claimed_id_should_not_be_claimed_by_another_replica() {
    conformance::exclusive(&harness().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_workers_on_two_replicas_should_never_hold_an_id_twice() {
    conformance::exclusive_under_contention(&harness().await).await;
}

#[tokio::test]
async fn an_id_enqueued_while_claimed_should_run_again() {
    conformance::no_lost_wakeup(&harness().await).await;
}

#[tokio::test]
async fn a_failed_id_should_wait_out_its_delay() {
    conformance::retry(&harness().await).await;
}

#[tokio::test]
async fn an_expired_lease_should_let_another_replica_claim() {
    conformance::lease_expiry(&harness().await).await;
}

#[tokio::test]
async fn renewing_should_keep_a_claim_past_its_lease() {
    conformance::renew_keeps_claim(&harness().await).await;
}

#[tokio::test]
async fn a_released_id_should_be_ready_at_once() {
    conformance::release(&harness().await).await;
}

#[tokio::test]
async fn a_hint_should_be_kept_only_without_a_newer_fresh_trigger() {
    conformance::hints(&harness().await).await;
}

#[tokio::test]
async fn a_claim_should_carry_the_most_telling_trigger_of_its_run() {
    conformance::triggers(&harness().await).await;
}

#[tokio::test]
async fn ids_should_survive_a_reconnect() {
    conformance::durability(&harness().await).await;
}

#[tokio::test]
async fn depth_should_count_waiting_and_claimed_ids() {
    conformance::depth(&harness().await).await;
}

#[tokio::test]
async fn a_listing_should_be_taken_once_per_interval_across_replicas() {
    conformance::listing_once_per_interval(&harness().await).await;
}

#[tokio::test]
async fn a_requested_listing_should_be_taken_at_once() {
    conformance::listing_on_request(&harness().await).await;
}

#[tokio::test]
async fn changed_should_wake_on_a_notification_from_another_replica() {
    conformance::changed_wakes(&harness().await).await;
}

#[tokio::test]
async fn claim_many_should_take_each_ready_id_once() {
    conformance_batch::claim_many_dedup(&harness().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_on_two_replicas_should_never_hold_an_id_twice() {
    conformance_batch::claim_many_exclusive(&harness().await).await;
}

#[tokio::test]
async fn done_many_should_run_ids_enqueued_while_claimed_again() {
    conformance_batch::done_many_no_lost_wakeup(&harness().await).await;
}

#[tokio::test]
async fn a_stale_batch_should_not_end_another_replicas_claims() {
    conformance_batch::lost_leases_in_a_batch(&harness().await).await;
}

#[tokio::test]
async fn listing_work_should_wait_behind_other_work_but_one_claim_in_ten() {
    conformance::claim_order(&harness().await).await;
}

#[tokio::test]
async fn renew_many_should_keep_claims_past_their_lease() {
    conformance_batch::renew_many_keeps_claims(&harness().await).await;
}

#[tokio::test]
async fn defer_should_wait_without_counting_an_attempt() {
    conformance_batch::defer_waits_without_counting(&harness().await).await;
}

#[tokio::test]
async fn changed_should_fall_back_to_polling_when_it_cannot_listen() {
    // A pool that can never hand out a connection: the listener cannot
    // subscribe, so `changed` must still return after its poll interval.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(100))
        .connect_lazy("postgres://nobody@127.0.0.1:1/none")
        .expect("a lazy pool");
    let q = queue_with(&pool, LEASE).with_poll_interval(Duration::from_millis(50));
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(5), q.changed())
            .await
            .expect("changed() returned after the poll interval");
    }
}

#[tokio::test]
async fn a_large_batch_with_repeats_should_enqueue_each_id_once() {
    let h = harness().await;
    let q = h.open().await;
    let items: Vec<_> = (0..1000u32)
        .chain(0..1000)
        .map(|n| Enqueue::fresh(RepoId::from(n)))
        .collect();
    q.enqueue(items).await.expect("enqueue");
    assert_eq!(q.depth().await.expect("depth"), 1000);
}

async fn synchronous_commit(pool: &sqlx::PgPool) -> String {
    sqlx::query_scalar("show synchronous_commit")
        .fetch_one(pool)
        .await
        .expect("show synchronous_commit")
}

#[tokio::test]
async fn claims_and_done_should_not_leave_enqueues_on_the_connection_unsafe() {
    let h = harness().await;
    // One connection: whatever a claim or `done` set on it, the next
    // enqueue would inherit.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&h.url)
        .await
        .expect("a connection");
    let queue = queue_with(&pool, LEASE);
    queue
        .enqueue(vec![Enqueue::fresh(RepoId(1))])
        .await
        .expect("enqueue");

    let claim = queue.claim("w").await.expect("claim").expect("a claim");
    assert_eq!(synchronous_commit(&pool).await, "on", "after a claim");
    queue.done(&claim).await.expect("done");
    assert_eq!(synchronous_commit(&pool).await, "on", "after done");
    assert_eq!(queue.depth().await.expect("depth"), 0, "done took effect");
}

#[tokio::test]
async fn batched_claims_and_done_should_not_leave_enqueues_on_the_connection_unsafe() {
    let h = harness().await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&h.url)
        .await
        .expect("a connection");
    let queue = queue_with(&pool, LEASE);
    let ids = (1..=3).map(|n| Enqueue::fresh(RepoId(n))).collect();
    queue.enqueue(ids).await.expect("enqueue");

    let claims = queue.claim_many("w", 10).await.expect("claim_many");
    assert_eq!(claims.len(), 3);
    assert_eq!(synchronous_commit(&pool).await, "on", "after claim_many");
    queue.done_many(&claims).await.expect("done_many");
    assert_eq!(synchronous_commit(&pool).await, "on", "after done_many");
    assert_eq!(
        queue.depth().await.expect("depth"),
        0,
        "done_many took effect"
    );
}
