//! Group commit for webhook intake: deliveries that arrive together are
//! written in one transaction.
//!
//! Each request verifies and parses its own delivery (so that work runs
//! concurrently), then hands it to a writer and waits. A writer takes every
//! delivery waiting (at most [`GroupLimits::max`]), waits [`GroupLimits::window`]
//! for more when there are few, and writes them all with one statement per
//! kind of write and one commit: the commit's wait for the disk, the biggest
//! cost of a durable intake, is paid once per group instead of once per
//! delivery. Every request of the group hears the same verdict: 202 after the
//! commit, or 503 when the group failed, so nothing answered 202 is lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::deliveries::{self, NewDelivery};
use super::gate::Accepted;
use super::intake::{self, Intake};
use crate::db::queue::PgQueue;

/// How deliveries are grouped.
#[derive(Debug, Clone, Copy)]
pub struct GroupLimits {
    /// The most deliveries one transaction writes.
    pub max: usize,
    /// How long a writer waits for more when fewer than `max` are waiting.
    pub window: Duration,
    /// Writers working at once: one groups while another commits.
    pub writers: usize,
}

impl Default for GroupLimits {
    fn default() -> Self {
        Self {
            max: 256,
            window: Duration::from_millis(1),
            writers: 2,
        }
    }
}

/// Why a delivery's group was not written (the request answers 503).
#[derive(Debug, Clone, thiserror::Error)]
pub enum GroupError {
    #[error("{0}")]
    Failed(String),
    #[error("the webhook writer stopped")]
    Stopped,
}

/// One delivery waiting for its group's commit.
struct Job {
    accepted: Accepted,
    done: oneshot::Sender<Result<Intake, GroupError>>,
}

type Jobs = Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>;

/// Hands deliveries to the writers; the writers stop when it is dropped.
pub struct GroupCommit {
    jobs: mpsc::Sender<Job>,
    /// The writers start with the first delivery, inside the runtime.
    idle: Mutex<Option<Writers>>,
}

struct Writers {
    jobs: Jobs,
    pool: PgPool,
    queue: Arc<PgQueue>,
    limits: GroupLimits,
}

impl GroupCommit {
    pub fn new(pool: PgPool, queue: Arc<PgQueue>, limits: GroupLimits) -> Self {
        let limits = GroupLimits {
            max: limits.max.max(1),
            writers: limits.writers.max(1),
            ..limits
        };
        let (jobs, receiver) = mpsc::channel(limits.max * limits.writers * 4);
        let writers = Writers {
            jobs: Arc::new(tokio::sync::Mutex::new(receiver)),
            pool,
            queue,
            limits,
        };
        Self {
            jobs,
            idle: Mutex::new(Some(writers)),
        }
    }

    /// Writes `accepted` with whatever else is waiting; resolves once the
    /// group has committed (or failed).
    pub async fn submit(&self, accepted: Accepted) -> Result<Intake, GroupError> {
        self.start();
        let (done, verdict) = oneshot::channel();
        self.jobs
            .send(Job { accepted, done })
            .await
            .map_err(|_| GroupError::Stopped)?;
        verdict.await.unwrap_or(Err(GroupError::Stopped))
    }

    fn start(&self) {
        let writers = match self.idle.lock() {
            Ok(mut idle) => idle.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Some(writers) = writers else { return };
        let writers = Arc::new(writers);
        for _ in 0..writers.limits.writers {
            tokio::spawn(writers.clone().run());
        }
    }
}

impl Writers {
    /// Takes groups and writes them until every sender is gone.
    async fn run(self: Arc<Self>) {
        while let Some(group) = self.next_group().await {
            let verdicts = match self.write(&group).await {
                Ok(intakes) => intakes.into_iter().map(Ok).collect(),
                Err(e) => {
                    tracing::error!(deliveries = group.len(), error = %e,
                        "webhook group not persisted; GitHub will show them failed");
                    vec![Err(GroupError::Failed(e.to_string())); group.len()]
                }
            };
            for (job, verdict) in group.into_iter().zip(verdicts) {
                // A request that gave up waiting is gone; its group stands.
                let _ = job.done.send(verdict);
            }
        }
    }

    /// Everything waiting now, up to `max`, plus what arrives within the
    /// window when that is less; `None` once the route is gone.
    async fn next_group(&self) -> Option<Vec<Job>> {
        let mut jobs = self.jobs.lock().await;
        let first = jobs.recv().await?;
        let mut group = vec![first];
        while group.len() < self.limits.max {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let deadline = Instant::now() + self.limits.window;
        while group.len() < self.limits.max {
            match tokio::time::timeout_at(deadline, jobs.recv()).await {
                Ok(Some(job)) => group.push(job),
                Ok(None) | Err(_) => break,
            }
        }
        Some(group)
    }

    /// One transaction for the whole group: what the events imply, then
    /// the delivery records; workers are woken after the commit.
    async fn write(&self, group: &[Job]) -> Result<Vec<Intake>, WriteError> {
        let mut tx = self.pool.begin().await?;
        let events: Vec<_> = group.iter().map(|j| &j.accepted.parsed.event).collect();
        let batch = intake::apply_batch(&mut tx, &self.queue, &events).await?;
        let records: Vec<NewDelivery<'_>> = group
            .iter()
            .zip(&batch.intakes)
            .map(|(job, intake)| NewDelivery {
                id: &job.accepted.delivery_id,
                event: &job.accepted.event,
                action: job.accepted.parsed.action.as_deref(),
                repo: job.accepted.parsed.repo.as_deref(),
                outcome: intake.outcome(),
            })
            .collect();
        deliveries::record_many(&mut *tx, &records).await?;
        tx.commit().await?;
        self.queue.enqueued(batch.enqueued as u64);
        Ok(batch.intakes)
    }
}

/// Why a group's transaction failed.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Intake(#[from] intake::IntakeError),
    #[error(transparent)]
    Deliveries(#[from] deliveries::DeliveriesError),
    #[error("webhook transaction: {0}")]
    Database(#[from] sqlx::Error),
}
