//! The controller: workers that drain the queue, and the periodic listing
//! with its sweep, until shutdown.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::config::ControllerConfig;
use super::metrics::ControllerMetrics;
use super::pace::Pacer;
use super::queue::{Claim, Enqueue, ListingSchedule, Trigger, WorkQueue};
use super::traits::{Handler, Lister, Storage, Tracker};
use crate::shutdown::Shutdown;

/// A level-driven controller over one queue and its four roles.
///
/// Triggers only enqueue keys; a worker claims a key, asks the storage for
/// the latest state and hands it to the handler. Failures are retried with
/// per-key backoff; a listing runs every `resync_interval` (on one replica)
/// and, when a partition listed completely, the keys it tracks but did not
/// list are enqueued too so their disappearance is noticed (the sweep).
pub struct Controller<Q, L, T, S, H> {
    pub(super) queue: Arc<Q>,
    lister: Arc<L>,
    tracker: Arc<T>,
    pub(super) storage: Arc<S>,
    pub(super) handler: Arc<H>,
    pub(super) config: ControllerConfig,
    pub(super) metrics: ControllerMetrics,
    /// The storage's read pace, shared by the workers.
    pacer: Option<Pacer>,
}

impl<Q, L, T, S, H> Controller<Q, L, T, S, H>
where
    Q: WorkQueue + ListingSchedule,
    L: Lister<Key = Q::Key>,
    T: Tracker<Key = Q::Key, Partition = L::Partition>,
    S: Storage<Key = Q::Key>,
    H: Handler<Key = Q::Key, State = S::State>,
{
    pub fn new(
        queue: Arc<Q>,
        lister: Arc<L>,
        tracker: Arc<T>,
        storage: Arc<S>,
        handler: Arc<H>,
    ) -> Self {
        let pacer = storage.read_pace().map(Pacer::new);
        Self {
            queue,
            lister,
            tracker,
            storage,
            handler,
            config: ControllerConfig::default(),
            metrics: ControllerMetrics::default(),
            pacer,
        }
    }

    pub fn with_config(mut self, config: ControllerConfig) -> Self {
        self.config = config;
        self
    }

    pub fn with_metrics(mut self, metrics: ControllerMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Runs until `shutdown` is asked, then stops claiming, lets in-flight
    /// work finish within `shutdown_grace` and gives back what did not.
    pub async fn run(self, shutdown: Shutdown) {
        let stop_rx = shutdown.clone();
        let this = Arc::new(self);
        if let Err(e) = this.queue.request_listing().await {
            tracing::warn!(error = %e, "could not request the start-up listing");
        }
        let mut tasks = JoinSet::new();
        let reads = Arc::new(Semaphore::new(this.config.concurrent_reads.max(1)));
        for n in 0..this.config.workers.max(1) {
            let (this, stop, reads) = (this.clone(), stop_rx.clone(), reads.clone());
            tasks.spawn(async move { this.worker(n, reads, stop).await });
        }
        {
            let (this, stop) = (this.clone(), stop_rx.clone());
            tasks.spawn(async move { this.listing_loop(stop).await });
        }
        {
            let (this, stop) = (this.clone(), stop_rx.clone());
            tasks.spawn(async move { this.depth_loop(stop).await });
        }
        shutdown.wait().await;
        tracing::info!("shutting down: no new work is claimed");
        while tasks.join_next().await.is_some() {}
    }

    /// One worker: claim a batch, handle it, repeat; idle until woken or
    /// polled. A worker claims only once it may read (`reads`), so keys that
    /// arrive while the reads are busy wait in the queue and form the next
    /// batch; a key that arrives to an idle controller starts at once.
    async fn worker(&self, n: usize, reads: Arc<Semaphore>, stop: Shutdown) {
        let name = format!("{}/{}", self.config.worker_name, n);
        while !stop.is_stopped() {
            let slot = tokio::select! {
                slot = reads.clone().acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => return,
                },
                () = stop.wait() => continue,
            };
            // The leases start no earlier than the claims are asked for.
            let asked = Instant::now();
            match self
                .queue
                .claim_many(&name, self.config.batch_size.max(1))
                .await
            {
                Ok(claims) if !claims.is_empty() => {
                    self.handle_claims(claims, asked, slot, &name, &stop).await
                }
                Ok(_) => {
                    drop(slot);
                    tokio::select! {
                        _ = self.queue.changed() => {}
                        _ = tokio::time::sleep(self.config.poll_interval) => {}
                        () = stop.wait() => {}
                    }
                }
                Err(e) => {
                    drop(slot);
                    tracing::warn!(error = %e, "claiming work failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.poll_interval) => {}
                        () = stop.wait() => {}
                    }
                }
            }
        }
    }

    /// Handles what one claim took: keys whose read is in hand (a
    /// listing's hint) at once, and beside them the keys that need a read,
    /// once the storage's pace lets it start (see [`Self::paced`]). Each
    /// part is its own batch, so neither waits for the other.
    async fn handle_claims(
        &self,
        claims: Vec<Claim<Q::Key>>,
        asked: Instant,
        slot: OwnedSemaphorePermit,
        worker: &str,
        stop: &Shutdown,
    ) {
        if self.pacer.is_none() {
            return self.handle_batch(claims, asked, Some(slot), stop).await;
        }
        let (hinted, mut reads): (Vec<_>, Vec<_>) =
            claims.into_iter().partition(|c| c.hint.is_some());
        // A batch is applied in order: pushes and the like before listing work.
        reads.sort_by_key(|c| c.trigger.is_listing());
        if reads.is_empty() {
            return self.handle_batch(hinted, asked, Some(slot), stop).await;
        }
        if hinted.is_empty() {
            let reads = self.paced(reads, worker, stop).await;
            return self.handle_batch(reads, asked, Some(slot), stop).await;
        }
        let in_hand = self.handle_batch(hinted, asked, None, stop);
        let to_read = async {
            let reads = self.paced(reads, worker, stop).await;
            self.handle_batch(reads, asked, Some(slot), stop).await
        };
        tokio::join!(in_hand, to_read);
    }

    /// `claims`, all needing a read, once that read may start: when it must
    /// wait for the storage's pace, the keys that need a read and became
    /// ready meanwhile join them (up to the batch size), so a trickle of
    /// triggers shares one read. The wait is never longer than a third of
    /// the lease, which is not renewed before the batch starts; the budget
    /// itself is guarded by the source's own rate limiting.
    async fn paced(
        &self,
        mut claims: Vec<Claim<Q::Key>>,
        worker: &str,
        stop: &Shutdown,
    ) -> Vec<Claim<Q::Key>> {
        let Some(pacer) = &self.pacer else {
            return claims;
        };
        let wait = pacer
            .reserve(Instant::now(), || self.storage.read_pace())
            .min(self.config.lease / 3);
        if wait.is_zero() {
            return claims;
        }
        tracing::debug!(
            ?wait,
            keys = claims.len(),
            "read paced; waiting for more keys to join it"
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            // Shutting down: the batch as it is, which the shutdown hands back.
            () = stop.wait() => return claims,
        }
        let room = self.config.batch_size.max(1).saturating_sub(claims.len());
        match self.queue.claim_reads(worker, room).await {
            Ok(more) => claims.extend(more),
            Err(e) => tracing::warn!(error = %e, "claiming keys to join a paced read failed"),
        }
        claims.sort_by_key(|c| c.trigger.is_listing());
        claims
    }

    /// Asks every `listing_check`, and as soon as this process asked for a
    /// listing, whether this replica should list now.
    async fn listing_loop(&self, stop: Shutdown) {
        while !stop.is_stopped() {
            match self.queue.take_listing(self.config.resync_interval).await {
                Ok(true) => {
                    tokio::select! {
                        _ = self.list_and_sweep() => {}
                        () = stop.wait() => return,
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not check the listing schedule"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.listing_check) => {}
                () = self.queue.listing_asked() => {}
                () = stop.wait() => {}
            }
        }
    }

    /// Lists everything, enqueues it, and sweeps each complete partition.
    pub async fn list_and_sweep(&self) {
        let started = Instant::now();
        // Enqueue batches as the lister finds them, while it goes on listing.
        let (found, mut batches) = tokio::sync::mpsc::unbounded_channel();
        let enqueue_batches = async {
            while let Some(batch) = batches.recv().await {
                self.enqueue(batch).await;
            }
        };
        let (listing, ()) = tokio::join!(self.lister.list_streaming(found), enqueue_batches);
        let partitions = match listing {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "listing failed; nothing swept");
                return;
            }
        };
        let (mut listed, mut swept) = (0usize, 0usize);
        let complete = partitions.iter().all(|p| p.outcome.is_ok());
        for partition in partitions {
            let keys: HashSet<Q::Key> = partition.items.iter().map(|i| i.key.clone()).collect();
            listed += keys.len();
            if let Err(e) = &partition.outcome {
                tracing::warn!(partition = %partition.partition, error = %e, "listing incomplete; not swept");
                continue;
            }
            match self.tracker.tracked(&partition.partition).await {
                Ok(tracked) => {
                    let total = tracked.len();
                    let mut gone: Vec<Q::Key> =
                        tracked.into_iter().filter(|k| !keys.contains(k)).collect();
                    gone.sort();
                    gone.dedup();
                    let listed: Vec<Q::Key> = keys.into_iter().collect();
                    let gone = match self
                        .tracker
                        .guard_sweep(&partition.partition, total, &listed, gone)
                        .await
                    {
                        Ok(allowed) => allowed,
                        Err(e) => {
                            tracing::warn!(partition = %partition.partition, error = %e, "sweep guard failed; not swept");
                            continue;
                        }
                    };
                    swept += gone.len();
                    self.enqueue(
                        gone.into_iter()
                            .map(|k| Enqueue::because(k, Trigger::Listing))
                            .collect(),
                    )
                    .await;
                }
                Err(e) => {
                    tracing::warn!(partition = %partition.partition, error = %e, "cannot read tracked keys; not swept")
                }
            }
        }
        if complete {
            if let Err(e) = self.queue.listing_finished().await {
                tracing::warn!(error = %e, "could not record the end of the listing");
            }
        }
        tracing::info!(
            listed,
            swept,
            duration_ms = started.elapsed().as_millis() as u64,
            "listing done"
        );
    }

    async fn enqueue(&self, items: Vec<Enqueue<Q::Key>>) {
        if items.is_empty() {
            return;
        }
        // Large listings go in slices so one statement stays reasonable.
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let slice: Vec<_> = items.by_ref().take(1000).collect();
            if let Err(e) = self.queue.enqueue(slice).await {
                tracing::warn!(error = %e, "enqueue after listing failed; the next listing retries");
                return;
            }
        }
    }

    /// Samples the queue depth for the metric.
    async fn depth_loop(&self, stop: Shutdown) {
        while !stop.is_stopped() {
            if let Ok(depth) = self.queue.depth().await {
                self.metrics.queue_depth.set(depth as i64);
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                () = stop.wait() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
