//! Group commit for webhook intake: deliveries that arrive together are
//! written in one transaction.
//!
//! Each request verifies and parses its own delivery (so that work runs
//! concurrently), then hands it to a writer and waits. A writer takes its
//! share of the deliveries waiting ([`group_size`]) and writes them all at
//! once: the commit's wait for the disk and the round trips to the database,
//! the biggest costs of a durable intake, are paid once per group instead of
//! once per delivery. While writers commit, the deliveries arriving
//! meanwhile gather for the next, so groups grow with the load by themselves
//! and a lone delivery is written at once (a fixed wait for more only
//! delayed every answer: docs/performance.md). Deliveries tend to arrive
//! in bursts (a sender answered at once sends again at once); a burst is
//! shared among the writers rather than taken whole by one, so that the
//! database works on it on several cores at once, but never in groups
//! smaller than [`GroupLimits::min_share`], below which each statement's
//! fixed cost outweighs that. Whatever events it holds, a
//! group is written by [`intake::write`]. Every request of the group hears
//! the same verdict: 202 after the commit, or 503 when the group failed, so
//! no enqueue answered 202 is lost (the deliveries' records follow, through
//! [`DeliveryLog`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::delivery_writer::{DeliveryLog, Logged};
use super::event::Accepted;
use super::free_push::FreePushes;
use super::write::{self, Intake, IntakeError};
use crate::db::queue::PgQueue;
use crate::shutdown::Shutdown;

/// How deliveries are grouped.
#[derive(Debug, Clone, Copy)]
pub struct GroupLimits {
    /// The most deliveries one transaction writes.
    pub max: usize,
    /// The fewest deliveries a burst is split into per writer: a writer
    /// takes an even share of what is waiting, but at least this many
    /// (or all, when fewer wait).
    pub min_share: usize,
    /// How long a writer waits for more when fewer than its share
    /// ([`group_size`]) are waiting (none by default: the next group
    /// gathers while one commits).
    pub window: Duration,
    /// Writers working at once: one groups while another commits.
    pub writers: usize,
}

impl Default for GroupLimits {
    fn default() -> Self {
        Self {
            max: 256,
            min_share: 16,
            window: Duration::ZERO,
            writers: crate::db::INTAKE_WRITERS,
        }
    }
}

/// Why a delivery's group was not written (the request answers 503).
#[derive(Debug, Clone, thiserror::Error)]
pub enum GroupError {
    /// Every delivery of the group shares the one cause.
    #[error("{0}")]
    Failed(#[source] Arc<IntakeError>),
    #[error("the webhook writer stopped")]
    Stopped,
}

/// One delivery waiting for its group's commit: the route sends it
/// ([`GroupCommit::jobs`]) and waits for its group's verdict on `done`.
pub(super) struct Job {
    pub(super) accepted: Accepted,
    pub(super) done: oneshot::Sender<Result<Intake, GroupError>>,
}

type Jobs = Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>;

/// Hands deliveries to the writers; the writers stop when it is dropped.
pub struct GroupCommit {
    jobs: mpsc::Sender<Job>,
    /// The writers start with the first delivery, inside the runtime.
    idle: Mutex<Option<Writers>>,
    /// Owns the writers' task: the server's stop joins it.
    shutdown: Shutdown,
}

struct Writers {
    jobs: Jobs,
    /// The server's pool: the writers stop writing once it is closed.
    shared: PgPool,
    /// The writers' own connections ([`own_connections`]), made at start.
    pool: PgPool,
    queue: Arc<PgQueue>,
    limits: GroupLimits,
    /// How pushes are decided without a read; `None`: every push is read.
    free: Option<FreePushes>,
    /// Where the answered deliveries' rows go, made at start.
    log: Option<DeliveryLog>,
}

impl GroupCommit {
    /// Writers on `pool`'s database, spawned through `shutdown` with the
    /// first delivery; they end once this is dropped and the deliveries
    /// handed to them are written.
    pub fn new(pool: PgPool, queue: Arc<PgQueue>, limits: GroupLimits, shutdown: Shutdown) -> Self {
        let limits = GroupLimits {
            max: limits.max.max(1),
            min_share: limits.min_share.max(1),
            writers: limits.writers.max(1),
            ..limits
        };
        let (jobs, receiver) = mpsc::channel(limits.max * limits.writers * 4);
        let writers = Writers {
            jobs: Arc::new(tokio::sync::Mutex::new(receiver)),
            shared: pool.clone(),
            pool,
            queue,
            limits,
            free: None,
            log: None,
        };
        Self {
            jobs,
            idle: Mutex::new(Some(writers)),
            shutdown,
        }
    }

    /// Decides pushes that left the project file alone without a read
    /// ([`FreePushes`]); without it every push is enqueued.
    pub fn with_free_pushes(self, free: Option<FreePushes>) -> Self {
        if let Ok(mut idle) = self.idle.lock() {
            if let Some(writers) = idle.as_mut() {
                writers.free = free;
            }
        }
        self
    }

    /// Where the route sends each delivery ([`Job`]): a writer takes it
    /// with whatever else is waiting. The writers start with the first.
    pub(super) fn jobs(&self) -> &mpsc::Sender<Job> {
        self.start();
        &self.jobs
    }

    fn start(&self) {
        let writers = match self.idle.lock() {
            Ok(mut idle) => idle.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Some(mut writers) = writers else { return };
        writers.pool = own_connections(&writers.shared, writers.limits.writers);
        let (log, writing) =
            DeliveryLog::new(own_connections(&writers.shared, 1), self.shutdown.clone());
        writers.log = Some(log);
        self.shutdown.spawn("delivery log", writing);
        self.shutdown
            .spawn("webhook writers", Arc::new(writers).run_all());
    }
}

impl Writers {
    /// Runs every writer until the route is gone, then closes their
    /// connections; closes them sooner when the server's pool closes
    /// (the writers then refuse to write).
    async fn run_all(self: Arc<Self>) {
        let mut running = JoinSet::new();
        for _ in 0..self.limits.writers {
            running.spawn(self.clone().run());
        }
        let (own, shared) = (self.pool.clone(), self.shared.clone());
        drop(self);
        tokio::select! {
            () = async { while running.join_next().await.is_some() {} } => {}
            () = shared.close_event() => {}
        }
        own.close().await;
        while running.join_next().await.is_some() {}
    }

    /// Takes groups and writes them ([`intake::write`]) until every sender
    /// is gone; refuses to write once the server's pool is closed. A group
    /// is this writer's share of what is waiting now ([`group_size`]), plus
    /// what arrives within the window when that is less.
    async fn run(self: Arc<Self>) {
        loop {
            let mut group = Vec::new();
            {
                let mut jobs = self.jobs.lock().await;
                let Some(first) = jobs.recv().await else {
                    return;
                };
                group.push(first);
                let size = group_size(1 + jobs.len(), &self.limits);
                while group.len() < size {
                    match jobs.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                let deadline = Instant::now() + self.limits.window;
                while group.len() < size {
                    match tokio::time::timeout_at(deadline, jobs.recv()).await {
                        Ok(Some(job)) => group.push(job),
                        Ok(None) | Err(_) => break,
                    }
                }
            }
            let accepted: Vec<&Accepted> = group.iter().map(|j| &j.accepted).collect();
            let written = if self.shared.is_closed() {
                Err(sqlx::Error::PoolClosed.into())
            } else {
                write::write(&self.pool, &self.queue, self.free.as_ref(), &accepted).await
            };
            let verdicts = match written {
                Ok(intakes) => intakes.into_iter().map(Ok).collect(),
                Err(e) => {
                    tracing::error!(deliveries = group.len(), error = %e,
                        "webhook group not persisted; GitHub will show them failed");
                    let cause = Arc::new(e);
                    vec![Err(GroupError::Failed(cause)); group.len()]
                }
            };
            let mut logged = Vec::with_capacity(group.len());
            for (job, verdict) in group.into_iter().zip(verdicts) {
                let outcome = verdict.as_ref().ok().map(Intake::outcome);
                // A request that gave up waiting is gone; its group stands.
                let _ = job.done.send(verdict);
                logged.extend(outcome.map(|outcome| Logged::of(job.accepted, outcome)));
            }
            if let Some(log) = &self.log {
                log.record(logged);
            }
        }
    }
}

/// How many of the `waiting` deliveries one writer takes: an even share
/// among the writers, at least `min_share` (or all of them, when fewer
/// wait), at most `max`. A burst of 16 with four writers is two groups of
/// 8 written at once; a backlog of 1,000 is four groups of 250.
fn group_size(waiting: usize, limits: &GroupLimits) -> usize {
    waiting
        .div_ceil(limits.writers.max(1))
        .max(limits.min_share)
        .min(limits.max)
        .max(1)
}

/// The writers' own connections, one per writer, closed when the writers
/// end or the server's pool closes. Their statements always take PostgreSQL's generic plan: a group's
/// statement is planned once per connection instead of at every group,
/// which PostgreSQL would otherwise do when the group's sizes make a
/// custom plan look cheaper (a burst of pushes to one repository: about a
/// sixth of the intake, docs/performance.md).
///
/// A connection is not pinged before each group: the ping was a second
/// round trip for every group. A connection that broke while idle fails
/// its group instead (503: GitHub shows the delivery failed, and it is
/// redelivered), and the pool replaces it.
fn own_connections(shared: &PgPool, writers: usize) -> PgPool {
    let options = (*shared.connect_options())
        .clone()
        .options([("plan_cache_mode", "force_generic_plan")]);
    PgPoolOptions::new()
        .max_connections(u32::try_from(writers).unwrap_or(u32::MAX))
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .connect_lazy_with(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_should_be_shared_among_the_writers_in_groups_of_at_least_the_floor() {
        let limits = GroupLimits::default();
        assert_eq!((limits.writers, limits.min_share), (2, 16));
        assert_eq!(group_size(1, &limits), 16, "a lone delivery: all waiting");
        assert_eq!(group_size(24, &limits), 16, "not two groups of 12");
        assert_eq!(group_size(32, &limits), 16, "two groups at once");
        assert_eq!(group_size(40, &limits), 20);
        assert_eq!(group_size(1_000, &limits), 256, "never past max");
        let one = GroupLimits {
            writers: 1,
            ..limits
        };
        assert_eq!(group_size(40, &one), 40, "one writer takes every one");
    }

    #[tokio::test]
    async fn the_writers_connections_should_take_generic_plans() {
        let (shared, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let own = own_connections(&shared, 1);
        let mode: String = sqlx::query_scalar("select current_setting('plan_cache_mode')")
            .fetch_one(&own)
            .await
            .expect("the setting");
        assert_eq!(mode, "force_generic_plan");
        let shared_mode: String = sqlx::query_scalar("select current_setting('plan_cache_mode')")
            .fetch_one(&shared)
            .await
            .expect("the setting");
        assert_eq!(shared_mode, "auto");
    }

    #[tokio::test]
    async fn the_writers_should_end_and_be_joined_once_the_route_is_gone() {
        let (shared, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let queue = crate::testing::queue(&shared);
        let (stop, shutdown) = crate::shutdown::channel();
        let group = GroupCommit::new(shared.clone(), queue, GroupLimits::default(), shutdown);
        group.start();
        shared.close().await;
        drop(group);
        let joined = tokio::time::timeout(Duration::from_secs(30), stop.join())
            .await
            .expect("the writers ended");
        // The writers and the delivery log's writer.
        assert_eq!((joined.spawned, joined.joined, joined.panicked), (2, 2, 0));
    }
}
