//! Workers that lose their lease (docs/contract.md#bounds), on a real PostgreSQL: a lease
//! taken by another replica, a lease that ran out, and a worker cut off from
//! the database. In each case the worker's attempt writes nothing to the
//! registry, and the id is never handled by two workers at once.

use crate::support;
use crate::support::registry::{handler, installed_repo, queue_with};
use support::pg_proxy;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pg_proxy::PgProxy;
use roster::controller::{
    Claim, Controller, ControllerConfig, Enqueue, Failure, Handler, Listed, Lister, Storage,
    Tracker, WorkQueue,
};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::registry::{ensure_known, RegistryHandler};
use roster::source::{FileState, Observed, RepoId, RepoInfo};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use support::server::eventually;
use tokio::sync::watch;

const ID: RepoId = RepoId(1);

/// Short, so a lease runs out within the test.
const SHORT_LEASE: Duration = Duration::from_secs(3);

/// Long enough that no renewal happens while the test runs.
const LONG_LEASE: Duration = Duration::from_secs(60);

fn info() -> RepoInfo {
    installed_repo("acme", "checkout", 7)
}

fn observed() -> Observed {
    Observed::Present {
        repo: info(),
        file: FileState::Found {
            sha: "aaaaaaa1".repeat(5),
            bytes: b"name: checkout-api\nowner: team-payments\n".to_vec(),
        },
    }
}

/// One attempt of one worker: when its storage call began, and how it
/// ended (the handler's answer, or dropped unfinished).
#[derive(Debug, Clone)]
struct Attempt {
    start: Instant,
    end: Option<Instant>,
    result: Option<Result<&'static str, String>>,
    dropped: bool,
}

/// The storage and handler of one worker: the storage answers once its gate
/// is open, the handler is the registry's; every attempt is recorded.
struct Probe {
    handler: RegistryHandler,
    gate: watch::Receiver<bool>,
    attempts: Arc<Mutex<Vec<Attempt>>>,
}

/// Marks the current attempt dropped unless it was disarmed first.
struct DropMark(Option<Arc<Mutex<Vec<Attempt>>>>);

impl Drop for DropMark {
    fn drop(&mut self) {
        if let Some(attempts) = self.0.take() {
            let mut attempts = attempts.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(last) = attempts.last_mut() {
                last.end = Some(Instant::now());
                last.dropped = true;
            }
        }
    }
}

impl Probe {
    fn new(pool: PgPool, queue: Arc<PgQueue>, gate: watch::Receiver<bool>) -> Self {
        Self {
            handler: handler(&pool, queue),
            gate,
            attempts: Arc::default(),
        }
    }
}

/// A shared view of a probe's attempts, kept after the probe moved into
/// its controller.
#[derive(Clone)]
struct Attempts(Arc<Mutex<Vec<Attempt>>>);

impl Attempts {
    fn all(&self) -> Vec<Attempt> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn first(&self) -> Option<Attempt> {
        self.all().into_iter().next()
    }
}

impl Storage for Probe {
    type Key = RepoId;
    type State = Observed;

    async fn get(&self, _key: &RepoId, _hint: Option<&[u8]>) -> Result<Observed, Failure> {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Attempt {
                start: Instant::now(),
                end: None,
                result: None,
                dropped: false,
            });
        let mut mark = DropMark(Some(self.attempts.clone()));
        let mut gate = self.gate.clone();
        let opened = gate.wait_for(|open| *open).await.is_ok();
        mark.0 = None;
        if opened {
            Ok(observed())
        } else {
            Err(Failure::scripted("the test ended"))
        }
    }
}

impl Handler for Probe {
    type Key = RepoId;
    type State = Observed;

    async fn apply(
        &self,
        key: &RepoId,
        state: Result<Observed, Failure>,
    ) -> Result<&'static str, Failure> {
        self.handler.apply(key, state).await
    }

    async fn apply_claimed(
        &self,
        claim: &Claim<RepoId>,
        state: Result<Observed, Failure>,
    ) -> Result<&'static str, Failure> {
        let mut mark = DropMark(Some(self.attempts.clone()));
        let result = self.handler.apply_claimed(claim, state).await;
        mark.0 = None;
        if let Some(last) = self
            .attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_mut()
        {
            last.end = Some(Instant::now());
            last.result = Some(result.clone().map_err(|f| f.message()));
        }
        result
    }
}

/// Lists nothing and tracks nothing: only what a test enqueues is handled.
struct Nothing;

impl Lister for Nothing {
    type Key = RepoId;
    type Partition = roster::source::Partition;
    async fn list(&self) -> Result<Vec<Listed<RepoId, Self::Partition>>, Failure> {
        Ok(Vec::new())
    }
}

impl Tracker for Nothing {
    type Key = RepoId;
    type Partition = roster::source::Partition;
    async fn tracked(&self, _partition: &Self::Partition) -> Result<Vec<RepoId>, Failure> {
        Ok(Vec::new())
    }
}

/// One replica's controller with one worker, running until dropped.
struct Replica {
    attempts: Attempts,
    task: tokio::task::JoinHandle<()>,
    /// Never asked: the replica runs until the test aborts it.
    _stop: roster::shutdown::Stop,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start_replica(
    name: &str,
    pool: &PgPool,
    lease: Duration,
    gate: watch::Receiver<bool>,
) -> Replica {
    let queue = Arc::new(queue_with(pool, lease));
    let probe = Arc::new(Probe::new(pool.clone(), queue.clone(), gate));
    let attempts = Attempts(probe.attempts.clone());
    let config = ControllerConfig {
        workers: 1,
        lease,
        poll_interval: Duration::from_millis(100),
        resync_interval: Duration::from_secs(3600),
        worker_name: name.to_owned(),
        ..ControllerConfig::default()
    };
    let controller = Controller::new(
        queue,
        Arc::new(Nothing),
        Arc::new(Nothing),
        probe.clone(),
        probe,
    )
    .with_config(config);
    let (stop, shutdown) = roster::shutdown::channel();
    let task = tokio::spawn(controller.run(shutdown));
    Replica {
        attempts,
        task,
        _stop: stop,
    }
}

/// A fresh database that knows the repository (`pending`) and has its id
/// queued.
async fn database() -> (PgPool, String) {
    let (pool, url) = fresh_database().await.expect("a fresh database");
    ensure_known(&pool, &[(ID, info())])
        .await
        .expect("ensure_known");
    queue_with(&pool, SHORT_LEASE)
        .enqueue(vec![Enqueue::fresh(ID)])
        .await
        .expect("enqueue");
    (pool, url)
}

/// What the registry holds for the repository: status, events, entries.
async fn registry(pool: &PgPool) -> (String, i64, i64) {
    sqlx::query_as(
        "select status,
                (select count(*) from events where repo_id = $1),
                (select count(*) from entries where repo_id = $1)
         from repositories where id = $1",
    )
    .bind(ID)
    .fetch_one(pool)
    .await
    .expect("the repository row")
}

/// Who holds the id now, and how long its lease has left (negative: ran out).
async fn holder(pool: &PgPool) -> Option<(String, f64)> {
    sqlx::query_as(
        "select claimed_by,
                extract(epoch from claimed_until - clock_timestamp())::float8
         from queue where repo_id = $1 and claimed_by is not null",
    )
    .bind(ID)
    .fetch_optional(pool)
    .await
    .expect("read the queue row")
}

/// Gives the id's claim to a worker of another replica, as a claim after
/// the lease ran out would.
const STEAL: &str = "update queue set claimed_by = 'thief', claim_token = 'stolen',
     claimed_until = now() + interval '1 hour' where repo_id = $1";

async fn first_attempt(attempts: &Attempts) -> Attempt {
    eventually(
        "the worker's first attempt",
        Duration::from_secs(10),
        || async { attempts.first() },
    )
    .await
}

async fn first_attempt_ended(attempts: &Attempts) -> Attempt {
    eventually(
        "the first attempt to end",
        Duration::from_secs(10),
        || async { attempts.first().filter(|a| a.end.is_some()) },
    )
    .await
}

#[tokio::test]
async fn a_stolen_lease_should_drop_the_attempt_at_the_next_renewal() {
    let (pool, _url) = database().await;
    let (_gate, closed) = watch::channel(false);
    let a = start_replica("a", &pool, SHORT_LEASE, closed);
    first_attempt(&a.attempts).await;

    sqlx::query(STEAL)
        .bind(ID)
        .execute(&pool)
        .await
        .expect("steal");

    let attempt = first_attempt_ended(&a.attempts).await;
    assert!(attempt.dropped, "{attempt:?}");
    let ran = attempt.end.expect("ended") - attempt.start;
    assert!(ran < SHORT_LEASE / 2, "dropped after {ran:?}");
    // Nothing written, and the thief's claim untouched.
    assert_eq!(registry(&pool).await, ("pending".to_owned(), 0, 0));
    assert_eq!(holder(&pool).await.map(|h| h.0).as_deref(), Some("thief"));
}

#[tokio::test]
async fn a_lease_stolen_during_the_reconcile_should_leave_its_writes_uncommitted() {
    let (pool, _url) = database().await;
    // Hold the repository's row, so the reconcile waits inside its
    // transaction while the lease is taken from it.
    let mut blocker = pool.begin().await.expect("begin");
    sqlx::query("select 1 from repositories where id = $1 for update")
        .bind(ID)
        .execute(&mut *blocker)
        .await
        .expect("lock the row");
    let (_gate, open) = watch::channel(true);
    let a = start_replica("a", &pool, LONG_LEASE, open);
    eventually(
        "the reconcile to wait for the row",
        Duration::from_secs(10),
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "select count(*) from pg_stat_activity
             where datname = current_database() and wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .expect("pg_stat_activity");
            (waiting > 0).then_some(())
        },
    )
    .await;
    sqlx::query(STEAL)
        .bind(ID)
        .execute(&mut *blocker)
        .await
        .expect("steal");
    blocker.commit().await.expect("commit");

    let attempt = first_attempt_ended(&a.attempts).await;
    // Not dropped (no renewal came due): refused at its commit.
    assert!(!attempt.dropped, "{attempt:?}");
    let Some(Err(message)) = &attempt.result else {
        panic!("the reconcile committed: {attempt:?}");
    };
    assert!(
        message.contains("lease") && message.contains("nothing written"),
        "{message}"
    );
    assert_eq!(registry(&pool).await, ("pending".to_owned(), 0, 0));
    assert_eq!(holder(&pool).await.map(|h| h.0).as_deref(), Some("thief"));
}

#[tokio::test]
async fn a_claim_whose_lease_ran_out_should_not_commit() {
    let (pool, _url) = database().await;
    let queue = Arc::new(queue_with(&pool, LONG_LEASE));
    let handler = handler(&pool, queue.clone());
    let claim = queue.claim("a").await.expect("claim").expect("a claim");
    sqlx::query("update queue set claimed_until = now() - interval '1 second' where repo_id = $1")
        .bind(ID)
        .execute(&pool)
        .await
        .expect("expire the lease");

    let refused = handler.apply_claimed(&claim, Ok(observed())).await;
    let failed = handler
        .apply_claimed(&claim, Err(Failure::scripted("GitHub answered 502")))
        .await;
    let waiting = Failure::scripted("waiting for GitHub's rate limit, resets at 14:05:00 UTC")
        .deferred_for(Duration::from_secs(600));
    let deferred = handler.apply_claimed(&claim, Err(waiting.clone())).await;

    let message = refused.expect_err("refused").message();
    assert!(message.contains("lease"), "{message}");
    assert_eq!(
        failed.expect_err("a failure").message(),
        "GitHub answered 502"
    );
    assert_eq!(deferred, Err(waiting));
    // Neither the reconcile, nor the failure, nor the wait was written.
    assert_eq!(registry(&pool).await, ("pending".to_owned(), 0, 0));
    let error: Option<String> = sqlx::query_scalar("select error from repositories where id = $1")
        .bind(ID)
        .fetch_one(&pool)
        .await
        .expect("the repository row");
    assert_eq!(error, None, "the wait's message was not recorded");

    // A live claim commits.
    queue.release(&claim).await.expect("release");
    let claim = queue.claim("b").await.expect("claim").expect("a claim");
    assert_eq!(
        handler.apply_claimed(&claim, Ok(observed())).await,
        Ok("synced")
    );
    assert_eq!(registry(&pool).await, ("synced".to_owned(), 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cut_off_from_the_database_should_drop_its_attempt_before_the_lease_ends() {
    let (pool, url) = database().await;
    let proxy = PgProxy::start(&url).await;
    // The default acquire timeout (30 s): a silent database makes calls
    // hang rather than fail fast.
    let cut_off = PgPoolOptions::new()
        .max_connections(4)
        .connect(proxy.url())
        .await
        .expect("a connection through the proxy");
    let (gate_a, closed) = watch::channel(false);
    let a = start_replica("a", &cut_off, SHORT_LEASE, closed);
    first_attempt(&a.attempts).await;
    let (claimed_by, _) = holder(&pool).await.expect("claimed");
    assert_eq!(claimed_by, "a/0");

    // The network goes; then the attempt moves on to its reconcile.
    proxy.cut();
    gate_a.send_replace(true);
    let (_gate_b, open) = watch::channel(true);
    let b = start_replica("b", &pool, SHORT_LEASE, open);

    let dropped = first_attempt_ended(&a.attempts).await;
    // Read at once: the lease that the dropped attempt held was still on.
    let at_drop = holder(&pool).await;
    assert!(dropped.dropped, "{dropped:?}");
    let (holder_then, left) = at_drop.expect("still claimed");
    assert_eq!(holder_then, "a/0", "nobody else had the id yet");
    assert!(left > 0.0, "the lease had run out {:.3}s before", -left);
    let ran = dropped.end.expect("ended") - dropped.start;
    assert!(ran < SHORT_LEASE, "dropped after {ran:?}");

    // The other replica takes the id once the lease ran out, and handles it once.
    eventually(
        "the other replica to finish",
        Duration::from_secs(15),
        || async {
            let finished = b.attempts.all().iter().any(|a| a.result.is_some());
            let queued: i64 = sqlx::query_scalar("select count(*) from queue")
                .fetch_one(&pool)
                .await
                .expect("count");
            (finished && queued == 0).then_some(())
        },
    )
    .await;
    let handled = b.attempts.all();
    assert_eq!(handled.len(), 1, "{handled:?}");
    assert_eq!(handled[0].result, Some(Ok("synced")));
    assert!(
        handled[0].start >= dropped.end.expect("ended"),
        "the other replica began before the attempt was dropped"
    );
    assert_eq!(a.attempts.all().len(), 1, "the cut-off worker tried once");
    assert_eq!(registry(&pool).await, ("synced".to_owned(), 1, 1));
    println!(
        "cut-off attempt dropped after {:.2}s with {left:.2}s of its {}s lease left",
        ran.as_secs_f64(),
        SHORT_LEASE.as_secs()
    );
}
