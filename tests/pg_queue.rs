//! The PostgreSQL queue against the conformance suite, on a real server
//! (`DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`), each
//! test on a fresh database, with a short lease on the real clock.

use crate::support::registry::queue_with;
use crate::support::server::eventually;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use roster::controller::testing::conformance::{self, QueueHarness};
use roster::controller::testing::conformance_batch;
use roster::controller::{
    Controller, ControllerConfig, Enqueue, Failure, Handler, Listed, Lister, ListingSchedule,
    Storage, Tracker, WorkQueue,
};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::source::{Partition, RepoId};
use sqlx::postgres::PgPoolOptions;

const LEASE: Duration = Duration::from_millis(300);
/// Far longer than a listing asked for may take to start.
const LIMIT: Duration = Duration::from_secs(30);

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

/// Lists nothing, counting its listings; keeps nothing and handles nothing.
#[derive(Clone, Default)]
struct Listings(Arc<AtomicUsize>);

impl Lister for Listings {
    type Key = RepoId;
    type Partition = Partition;
    async fn list(&self) -> Result<Vec<Listed<RepoId, Partition>>, Failure> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
}

impl Tracker for Listings {
    type Key = RepoId;
    type Partition = Partition;
    async fn tracked(&self, _partition: &Partition) -> Result<Vec<RepoId>, Failure> {
        Ok(Vec::new())
    }
}

impl Storage for Listings {
    type Key = RepoId;
    type State = ();
    async fn get(&self, _key: &RepoId, _hint: Option<&[u8]>) -> Result<(), Failure> {
        Ok(())
    }
}

impl Handler for Listings {
    type Key = RepoId;
    type State = ();
    async fn apply(
        &self,
        _key: &RepoId,
        _state: Result<(), Failure>,
    ) -> Result<&'static str, Failure> {
        Ok("done")
    }
}

/// A listing asked for in this process (an installation's webhook, the
/// resync API) starts at once, not at the schedule's next check: here a
/// check an hour away.
#[tokio::test]
async fn a_listing_asked_for_should_start_without_waiting_for_the_next_check() {
    let (pool, _url) = fresh_database().await.expect("a fresh database");
    let queue = Arc::new(queue_with(&pool, LEASE));
    let listings = Listings::default();
    let config = ControllerConfig {
        workers: 1,
        listing_check: Duration::from_secs(3600),
        resync_interval: Duration::from_secs(3600),
        ..ControllerConfig::default()
    };
    let l = Arc::new(listings.clone());
    let controller =
        Controller::new(queue.clone(), l.clone(), l.clone(), l.clone(), l).with_config(config);
    let (_stop, shutdown) = roster::shutdown::channel();
    let task = tokio::spawn(controller.run(shutdown));
    let count = || listings.0.load(Ordering::SeqCst);
    eventually("the listing at start", LIMIT, || async {
        (count() >= 1).then_some(())
    })
    .await;
    let before = count();
    queue.request_listing().await.expect("a listing asked for");
    eventually("the listing asked for", LIMIT, || async {
        (count() > before).then_some(())
    })
    .await;
    task.abort();
}
