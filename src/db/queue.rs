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

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{PgConnection, PgPool};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::controller::queue::{Claim, Enqueue, ItemStatus, ListingSchedule, Trigger, WorkQueue};
use crate::db::one_statement;
use crate::source::RepoId;

pub use enqueue::{EnqueueRows, SETTLED};

/// The `LISTEN/NOTIFY` channel that announces new work.
pub const CHANNEL: &str = "roster_queue";

/// How long `changed` waits when no listener connection is up.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);
/// Longest wait between attempts to reconnect the listener.
const MAX_RECONNECT_WAIT: Duration = Duration::from_secs(30);
/// Longest delay or interval sent to the database, far inside its range.
const MAX_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Why a [`PgQueue`] operation failed: the database that holds it, never
/// the caller. The queue's own, so the controller's core names no store.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The database failed the statement, or could not be reached.
    #[error("work queue database: {0}")]
    Database(#[from] sqlx::Error),
}

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
    /// Claims this handle took: every tenth goes to listing work first.
    claims: Arc<AtomicU64>,
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
    /// Holds a permit once a listing was asked for in this process.
    listing: Notify,
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
                listing: Notify::new(),
            }),
            tasks: Arc::default(),
            adds: None,
            claims: Arc::default(),
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
        let rows = EnqueueRows::new(items);
        one_statement::execute_one(conn, &rows).await.map_err(db)?;
        Ok(rows.added())
    }

    /// Counts `added` committed ids and wakes the workers. Called only after
    /// the enqueue is visible, so a woken worker finds the rows; nothing
    /// happens when `added` is zero.
    pub fn enqueued(&self, added: u64) {
        if added == 0 {
            return;
        }
        self.count(added);
        self.wake();
    }

    /// Tells this process's listing loop that a listing request was
    /// committed: it takes the request now, not at its next check.
    pub fn listing_requested(&self) {
        self.signal.listing.notify_one();
    }

    /// Writes a listing request on `conn`, typically inside the caller's
    /// transaction: [`ListingSchedule::request_listing`] for one
    /// transaction. Once committed, [`Self::listing_requested`] says so.
    pub async fn request_listing_in(&self, conn: &mut PgConnection) -> Result<(), QueueError> {
        sqlx::query(REQUEST_LISTING)
            .execute(conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Writes a listing request on `conn` unless a listing has seen each
    /// of `seen`: it found that partition (it lists it whole, running or
    /// done), or it started well after the moment given (a minute's margin
    /// for the clocks) and so found everything that existed then.
    pub async fn request_listing_unless_seen_in(
        &self,
        conn: &mut PgConnection,
        seen: &[Seen],
    ) -> Result<(), QueueError> {
        let partitions: Vec<&str> = seen.iter().map(|s| s.partition.as_str()).collect();
        let since: Vec<Option<i64>> = seen.iter().map(|s| s.created_at).collect();
        sqlx::query(REQUEST_LISTING_UNLESS_SEEN)
            .bind(&partitions)
            .bind(&since)
            .execute(conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Like [`enqueued`](Self::enqueued), after a write whose statement
    /// sent the `NOTIFY` on [`CHANNEL`] itself
    /// ([`one_statement::execute_and_notify`](crate::db::one_statement::execute_and_notify)):
    /// counts `added` and wakes this replica's waiters when the write
    /// `changed` a row (otherwise nothing became claimable).
    pub fn enqueued_and_notified(&self, added: u64, changed: bool) {
        self.count(added);
        if changed {
            self.signal.notify.notify_waiters();
        }
    }

    fn count(&self, added: u64) {
        if let Some(adds) = &self.adds {
            adds.inc_by(added);
        }
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
    QueueError::Database(e)
}

/// Seconds as the database's `make_interval` takes them.
fn seconds(d: Duration) -> f64 {
    d.min(MAX_DELAY).as_secs_f64()
}

/// Asks the next listing pass to run now.
const REQUEST_LISTING: &str = "UPDATE listing_schedule SET requested = true";
/// Asks for a listing when one of the partitions is unseen (no listing
/// found it, and none started well after the moment given). A listing that
/// has started but not yet recorded what it found (in the last five
/// minutes: a listing records that first, and a crashed one is replaced
/// at the next start) will find what exists now: the unseen partitions
/// wait in `awaited` for it instead, and it asks again only for one it
/// did not find ([`listing::partitions_found`]). The row lock orders this
/// against that record: whichever comes second sees the other.
const REQUEST_LISTING_UNLESS_SEEN: &str = "WITH unseen AS (
         SELECT s.partition FROM unnest($1::text[], $2::bigint[]) AS s(partition, since)
         WHERE NOT EXISTS (SELECT 1 FROM listed_partitions p WHERE p.partition = s.partition)
           AND (s.since IS NULL
                OR (SELECT last_started_at FROM listing_schedule)
                   <= to_timestamp(s.since) + interval '1 minute'))
     UPDATE listing_schedule SET
         requested = requested OR NOT (last_started_at > partitions_recorded_at
                                       AND last_started_at > now() - interval '5 minutes'),
         awaited = CASE
             WHEN last_started_at > partitions_recorded_at
                  AND last_started_at > now() - interval '5 minutes'
             THEN awaited || ARRAY(SELECT partition FROM unseen)
             ELSE awaited
         END
     WHERE EXISTS (SELECT 1 FROM unseen)";

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
mod enqueue;
mod listing;
mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod work_queue;

pub use listing::{partition_unlisted, partitions_found, Seen};
pub use summary::{listing_times, summary, ListingTimes, QueueSummary};
