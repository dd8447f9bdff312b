//! The [`WorkQueue`] in PostgreSQL: durable, and shared by every replica.
//!
//! One row per repository id (`queue`, migration 0002). Enqueueing is an
//! upsert, claiming takes a lease with `FOR UPDATE SKIP LOCKED`, and every
//! time comes from the database clock `now()`, which all replicas share.
//! `done`, `fail`, `release` and `renew` act only while the caller's claim
//! token is still the row's, so a holder whose lease ran out cannot end the
//! newer claim.
//!
//! Idle workers wake through `NOTIFY` on [`CHANNEL`]. The notification is
//! sent by a background task right after the enqueue commits, not inside the
//! enqueue's transaction: PostgreSQL serialises the commits of notifying
//! transactions, which halves upsert throughput, while one notification per
//! round trip wakes the listeners just as well. Enqueues that come while a
//! notification is on its way share the next one. Workers also poll, so a
//! notification lost in a crash costs only latency.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::controller::queue::{
    Claim, Enqueue, ItemStatus, ListingSchedule, QueueError, WorkQueue,
};
use crate::source::RepoId;

/// The `LISTEN/NOTIFY` channel that announces new work.
pub const CHANNEL: &str = "roster_queue";

/// How long `changed` waits when no listener connection is up.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);
/// Longest wait between attempts to reconnect the listener.
const MAX_RECONNECT_WAIT: Duration = Duration::from_secs(30);
/// Longest delay or interval sent to the database, far inside its range.
const MAX_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The durable work queue of repository ids.
///
/// Clones share the pool and the background tasks.
#[derive(Clone)]
pub struct PgQueue {
    pool: PgPool,
    lease: Duration,
    poll_interval: Duration,
    signal: Arc<Signal>,
    tasks: Arc<Tasks>,
    /// Counts every id enqueued, whoever enqueues it (`roster_queue_adds`).
    adds: Option<prometheus_client::metrics::counter::Counter>,
}

/// What the handles and the background tasks share; the tasks hold only
/// this, so dropping the last handle stops them.
struct Signal {
    /// Woken on every notification, and on every listener failure (a
    /// notification may have been lost).
    notify: Notify,
    /// A listener connection is up and subscribed.
    connected: AtomicBool,
    /// Holds a permit while a notification to the other replicas is owed.
    owed: Notify,
}

/// The background tasks, each started when first needed.
#[derive(Default)]
struct Tasks {
    /// Turns notifications into wake-ups (started by the first `changed`).
    listener: Mutex<Option<AbortHandle>>,
    /// Sends the owed notifications (started by the first wake-up).
    notifier: Mutex<Option<AbortHandle>>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for slot in [&mut self.listener, &mut self.notifier] {
            let slot = slot
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(task) = slot.take() {
                task.abort();
            }
        }
    }
}

/// Spawns `task` into `slot` unless it runs already or no runtime is up.
fn start_once<F>(slot: &Mutex<Option<AbortHandle>>, task: impl FnOnce() -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut slot = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if slot.is_none() {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            *slot = Some(runtime.spawn(task()).abort_handle());
        }
    }
}

impl PgQueue {
    /// A queue on `pool` whose claims last `lease` unless renewed. The pool
    /// must have the migrations applied.
    pub fn new(pool: PgPool, lease: Duration) -> Self {
        Self {
            pool,
            lease,
            poll_interval: DEFAULT_POLL_INTERVAL,
            signal: Arc::new(Signal {
                notify: Notify::new(),
                connected: AtomicBool::new(false),
                owed: Notify::new(),
            }),
            tasks: Arc::default(),
            adds: None,
        }
    }

    /// Counts every enqueued id in `adds`, so webhooks, the API and the
    /// listing all show in one metric.
    pub fn with_adds_counter(mut self, adds: prometheus_client::metrics::counter::Counter) -> Self {
        self.adds = Some(adds);
        self
    }

    /// How long `changed` waits for a notification while the listener
    /// connection is down (default 2 s).
    pub fn with_poll_interval(mut self, poll_interval: Duration) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Writes the enqueue on `conn`, typically inside the caller's
    /// transaction, so the ids become work only if that transaction commits.
    /// Returns how many distinct ids it wrote; once the transaction has
    /// committed, pass that to [`PgQueue::enqueued`] so workers wake up.
    pub async fn enqueue_in(
        &self,
        conn: &mut PgConnection,
        items: Vec<Enqueue<RepoId>>,
    ) -> Result<u64, QueueError> {
        if items.is_empty() {
            return Ok(0);
        }
        let mut merged: BTreeMap<i64, Option<Vec<u8>>> = BTreeMap::new();
        for Enqueue { key, hint } in items {
            match merged.remove(&key.0) {
                Some(pending) => merged.insert(key.0, merge_hint(pending, hint)),
                None => merged.insert(key.0, hint),
            };
        }
        let (ids, hints): (Vec<i64>, Vec<Option<Vec<u8>>>) = merged.into_iter().unzip();
        let added = ids.len() as u64;
        sqlx::query(ENQUEUE)
            .bind(ids)
            .bind(hints)
            .execute(conn)
            .await
            .map_err(db)?;
        Ok(added)
    }

    /// Counts `added` committed ids and wakes the workers. Called only after
    /// the enqueue is visible, so a woken worker finds the rows; nothing
    /// happens when `added` is zero.
    pub fn enqueued(&self, added: u64) {
        if added == 0 {
            return;
        }
        if let Some(adds) = &self.adds {
            adds.inc_by(added);
        }
        self.wake();
    }

    /// Writes a listing request on `conn`, typically inside the caller's
    /// transaction: [`ListingSchedule::request_listing`] for one transaction.
    pub async fn request_listing_in(&self, conn: &mut PgConnection) -> Result<(), QueueError> {
        sqlx::query(REQUEST_LISTING)
            .execute(conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Wakes this replica's waiters now, and the other replicas' soon.
    fn wake(&self) {
        self.signal.notify.notify_waiters();
        self.signal.owed.notify_one();
        let (pool, signal) = (self.pool.clone(), Arc::clone(&self.signal));
        start_once(&self.tasks.notifier, move || {
            send_notifications(pool, signal)
        });
    }
}

/// Sends a `NOTIFY` per owed permit; permits owed while one is on its way
/// collapse into the next.
async fn send_notifications(pool: PgPool, signal: Arc<Signal>) {
    loop {
        signal.owed.notified().await;
        let sent = sqlx::query("SELECT pg_notify($1, '')")
            .bind(CHANNEL)
            .execute(&pool)
            .await;
        if let Err(e) = sent {
            // The other replicas still poll; this only delays them.
            tracing::warn!(error = %e, "cannot notify other replicas of new work");
        }
    }
}

/// Keeps a `LISTEN` connection up and turns notifications into wake-ups.
async fn listen(pool: PgPool, signal: Arc<Signal>) {
    let mut wait = Duration::from_millis(100);
    let mut first = true;
    loop {
        match subscribe(&pool).await {
            Ok(mut listener) => {
                signal.connected.store(true, Ordering::SeqCst);
                if !first {
                    // Notifications sent while we were away are lost.
                    signal.notify.notify_waiters();
                }
                wait = Duration::from_millis(100);
                loop {
                    match listener.try_recv().await {
                        // `None`: the connection dropped and came back, so
                        // something may have been missed; wake either way.
                        Ok(_) => signal.notify.notify_waiters(),
                        // The server is shutting down: nothing to listen for.
                        Err(_) if pool.is_closed() => return,
                        Err(e) => {
                            tracing::warn!(error = %e, "queue listener lost its connection");
                            break;
                        }
                    }
                }
            }
            Err(_) if pool.is_closed() => return,
            Err(e) => tracing::warn!(error = %e, "queue listener cannot connect"),
        }
        first = false;
        signal.connected.store(false, Ordering::SeqCst);
        signal.notify.notify_waiters();
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(MAX_RECONNECT_WAIT);
    }
}

async fn subscribe(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

fn db(e: sqlx::Error) -> QueueError {
    QueueError(e.to_string())
}

/// Seconds as the database's `make_interval` takes them.
fn seconds(d: Duration) -> f64 {
    d.min(MAX_DELAY).as_secs_f64()
}

/// A hint survives only while every pending trigger carried one.
fn merge_hint(pending: Option<Vec<u8>>, new: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (pending, new) {
        (Some(_), Some(new)) => Some(new),
        _ => None,
    }
}

/// One upsert per id, the batch's own repeats merged first (a statement may
/// not touch a row twice); ids sorted so concurrent batches lock in order.
/// A claimed row is marked to run again; a waiting row becomes ready now.
const ENQUEUE: &str = "
INSERT INTO queue AS q (repo_id, hint)
SELECT id, hint FROM UNNEST($1::bigint[], $2::bytea[]) AS batch(id, hint)
ON CONFLICT (repo_id) DO UPDATE SET
    hint = CASE
        WHEN q.claimed_by IS NOT NULL THEN NULL
        WHEN q.hint IS NOT NULL AND EXCLUDED.hint IS NOT NULL THEN EXCLUDED.hint
    END,
    not_before = CASE
        WHEN q.claimed_by IS NULL THEN LEAST(q.not_before, now())
        ELSE q.not_before
    END,
    rerun = q.claimed_by IS NOT NULL";

/// Asks the next listing pass to run now.
const REQUEST_LISTING: &str = "UPDATE listing_schedule SET requested = true";

/// A condition that lets the statement's transaction commit without waiting
/// for the disk. Claims and `done` may: a claim the database loses in a
/// crash only frees the id sooner, and a lost `done` only makes the id run
/// again (both idempotent, and WAL order means a lost claim or `done` never
/// outlives what followed it). Enqueues, which clients are told are safe,
/// always wait.
macro_rules! no_wait {
    () => {
        "set_config('synchronous_commit', 'off', true) = 'off'"
    };
}

// After `no_wait!`, so the statements there can use it.
mod batch;
mod summary;

use batch::{ids_and_tokens, CLAIM_MANY, DONE_MANY_AGAIN, DONE_MANY_DELETE, RENEW_MANY};
pub use summary::{listing_times, summary, ListingTimes, QueueSummary};

/// Ready rows: due, and unclaimed or with a lease that ran out.
const CLAIM: &str = concat!(
    "
UPDATE queue SET
    claimed_by = $1,
    claim_token = gen_random_uuid()::text,
    claimed_until = now() + make_interval(secs => $2),
    rerun = false
WHERE repo_id = (
    SELECT repo_id FROM queue
    WHERE not_before <= now() AND (claimed_by IS NULL OR claimed_until <= now())
    ORDER BY not_before
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
AND ",
    no_wait!(),
    "
RETURNING repo_id, attempts, hint, claim_token"
);

/// The assignments that end a claim.
const UNCLAIM: &str = "claimed_by = NULL, claim_token = NULL, claimed_until = NULL, rerun = false";

fn claim_of((id, attempts, hint, token): (i64, i32, Option<Vec<u8>>, String)) -> Claim<RepoId> {
    Claim {
        key: RepoId(id),
        attempts: u32::try_from(attempts).unwrap_or(0),
        hint,
        token,
    }
}

impl WorkQueue for PgQueue {
    type Key = RepoId;

    async fn enqueue(&self, items: Vec<Enqueue<RepoId>>) -> Result<(), QueueError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let added = self.enqueue_in(&mut conn, items).await?;
        drop(conn);
        self.enqueued(added);
        Ok(())
    }

    async fn claim(&self, worker: &str) -> Result<Option<Claim<RepoId>>, QueueError> {
        let row: Option<(i64, i32, Option<Vec<u8>>, String)> = sqlx::query_as(CLAIM)
            .bind(worker)
            .bind(seconds(self.lease))
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        Ok(row.map(claim_of))
    }

    async fn claim_many(&self, worker: &str, max: usize) -> Result<Vec<Claim<RepoId>>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let rows: Vec<(i64, i32, Option<Vec<u8>>, String)> = sqlx::query_as(CLAIM_MANY)
            .bind(worker)
            .bind(seconds(self.lease))
            .bind(i64::try_from(max).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        Ok(rows.into_iter().map(claim_of).collect())
    }

    async fn renew_many(&self, claims: &[Claim<RepoId>]) -> Result<Vec<bool>, QueueError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, tokens) = ids_and_tokens(claims);
        let held: std::collections::HashSet<i64> = sqlx::query_scalar(RENEW_MANY)
            .bind(ids)
            .bind(tokens)
            .bind(seconds(self.lease))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .into_iter()
            .collect();
        Ok(claims.iter().map(|c| held.contains(&c.key.0)).collect())
    }

    async fn done_many(&self, claims: &[Claim<RepoId>]) -> Result<(), QueueError> {
        if claims.is_empty() {
            return Ok(());
        }
        let (ids, tokens) = ids_and_tokens(claims);
        // As in `done`: `rerun` only goes from false to true while a token
        // is unchanged, so a row the delete left for that reason is found
        // by the update, which reads the table afresh.
        let deleted = sqlx::query(DONE_MANY_DELETE)
            .bind(&ids)
            .bind(&tokens)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if deleted.rows_affected() == claims.len() as u64 {
            return Ok(());
        }
        let again = sqlx::query(DONE_MANY_AGAIN)
            .bind(&ids)
            .bind(&tokens)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if again.rows_affected() > 0 {
            self.wake();
        }
        Ok(())
    }

    async fn renew(&self, claim: &Claim<RepoId>) -> Result<bool, QueueError> {
        let renewed = sqlx::query(
            "UPDATE queue SET claimed_until = now() + make_interval(secs => $3)
             WHERE repo_id = $1 AND claim_token = $2",
        )
        .bind(claim.key.0)
        .bind(&claim.token)
        .bind(seconds(self.lease))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(renewed.rows_affected() == 1)
    }

    async fn done(&self, claim: &Claim<RepoId>) -> Result<(), QueueError> {
        // While the token is unchanged `rerun` only goes from false to true,
        // so when the delete finds `rerun` set, the update below finds it too.
        let deleted = sqlx::query(concat!(
            "DELETE FROM queue WHERE repo_id = $1 AND claim_token = $2 AND NOT rerun AND ",
            no_wait!()
        ))
        .bind(claim.key.0)
        .bind(&claim.token)
        .execute(&self.pool)
        .await
        .map_err(db)?;
        if deleted.rows_affected() == 1 {
            return Ok(());
        }
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, attempts = 0, last_error = NULL,
                not_before = now(), enqueued_at = now()
             WHERE repo_id = $1 AND claim_token = $2 AND rerun"
        );
        let again = sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if again.rows_affected() == 1 {
            self.wake();
        }
        Ok(())
    }

    async fn fail(
        &self,
        claim: &Claim<RepoId>,
        error: &str,
        delay: Duration,
    ) -> Result<(), QueueError> {
        // A trigger that arrived during the attempt does not shorten the
        // delay: the id runs again anyway, and the delay may be a rate limit.
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, attempts = attempts + 1, last_error = $3,
                not_before = now() + make_interval(secs => $4)
             WHERE repo_id = $1 AND claim_token = $2"
        );
        sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .bind(error)
            .bind(seconds(delay))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn release(&self, claim: &Claim<RepoId>) -> Result<(), QueueError> {
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, not_before = now()
             WHERE repo_id = $1 AND claim_token = $2"
        );
        let released = sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if released.rows_affected() == 1 {
            self.wake();
        }
        Ok(())
    }

    async fn defer(&self, claim: &Claim<RepoId>, delay: Duration) -> Result<(), QueueError> {
        let query = format!(
            "UPDATE queue SET {UNCLAIM}, not_before = now() + make_interval(secs => $3)
             WHERE repo_id = $1 AND claim_token = $2"
        );
        sqlx::query(&query)
            .bind(claim.key.0)
            .bind(&claim.token)
            .bind(seconds(delay))
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        // Registered now, not at the first poll, so a notification that
        // arrives between this call and the first poll still counts.
        let mut notified = Box::pin(self.signal.notify.notified());
        notified.as_mut().enable();
        let (pool, listening) = (self.pool.clone(), Arc::clone(&self.signal));
        start_once(&self.tasks.listener, move || listen(pool, listening));
        let signal = Arc::clone(&self.signal);
        let poll_interval = self.poll_interval;
        async move {
            if signal.connected.load(Ordering::SeqCst) {
                notified.await;
            } else {
                // No listener: fall back to polling rather than sleep forever.
                let _ = tokio::time::timeout(poll_interval, notified).await;
            }
        }
    }

    async fn depth(&self) -> Result<u64, QueueError> {
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM queue")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn status(&self, key: &RepoId) -> Result<Option<ItemStatus>, QueueError> {
        let row: Option<(i32, Option<String>, f64, bool)> = sqlx::query_as(
            "SELECT attempts, last_error,
                EXTRACT(EPOCH FROM GREATEST(not_before - now(), interval '0'))::float8,
                COALESCE(claimed_until > now(), false)
             FROM queue WHERE repo_id = $1",
        )
        .bind(key.0)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(
            row.map(|(attempts, last_error, ready_in, claimed)| ItemStatus {
                attempts: u32::try_from(attempts).unwrap_or(0),
                last_error,
                ready_in: Duration::try_from_secs_f64(ready_in).unwrap_or(Duration::ZERO),
                claimed,
            }),
        )
    }
}

impl ListingSchedule for PgQueue {
    async fn take_listing(&self, interval: Duration) -> Result<bool, QueueError> {
        // The row lock makes concurrent callers wait, then re-check the
        // condition against the winner's update: exactly one gets the row.
        let taken = sqlx::query(
            "UPDATE listing_schedule SET last_started_at = now(), requested = false
             WHERE requested OR last_started_at <= now() - make_interval(secs => $1)",
        )
        .bind(seconds(interval))
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(taken.rows_affected() == 1)
    }

    async fn request_listing(&self) -> Result<(), QueueError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        self.request_listing_in(&mut conn).await
    }

    async fn listing_finished(&self) -> Result<(), QueueError> {
        sqlx::query("UPDATE listing_schedule SET last_finished_at = now()")
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }
}
