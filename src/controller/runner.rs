//! The controller: workers that drain the queue, and the periodic listing
//! with its sweep, until shutdown.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument;

use super::config::ControllerConfig;
use super::lease::{self, Abandon, LeaseTimes};
use super::metrics::ControllerMetrics;
use super::queue::{Claim, Enqueue, ListingSchedule, WorkQueue};
use super::traits::{Failure, Handler, Lister, Storage, Tracker};

/// A level-driven controller over one queue and its three roles.
///
/// Triggers only enqueue keys; a worker claims a key, asks the storage for
/// the latest state and hands it to the handler. Failures are retried with
/// per-key backoff; a listing runs every `resync_interval` (on one replica)
/// and, when a partition listed completely, the keys it tracks but did not
/// list are enqueued too so their disappearance is noticed (the sweep).
pub struct Controller<Q, L, T, S, H> {
    queue: Arc<Q>,
    lister: Arc<L>,
    tracker: Arc<T>,
    storage: Arc<S>,
    handler: Arc<H>,
    config: ControllerConfig,
    metrics: ControllerMetrics,
}

impl<Q, L, T, S, H> Controller<Q, L, T, S, H>
where
    Q: WorkQueue + ListingSchedule,
    L: Lister<Key = Q::Key>,
    T: Tracker<Key = Q::Key>,
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
        Self {
            queue,
            lister,
            tracker,
            storage,
            handler,
            config: ControllerConfig::default(),
            metrics: ControllerMetrics::default(),
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

    /// Runs until `shutdown` resolves, then stops claiming, lets in-flight
    /// work finish within `shutdown_grace` and gives back what did not.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let this = Arc::new(self);
        if let Err(e) = this.queue.request_listing().await {
            tracing::warn!(error = %e, "could not request the start-up listing");
        }
        let mut tasks = JoinSet::new();
        for n in 0..this.config.workers.max(1) {
            let (this, stop) = (this.clone(), stop_rx.clone());
            tasks.spawn(async move { this.worker(n, stop).await });
        }
        {
            let (this, stop) = (this.clone(), stop_rx.clone());
            tasks.spawn(async move { this.listing_loop(stop).await });
        }
        {
            let (this, stop) = (this.clone(), stop_rx.clone());
            tasks.spawn(async move { this.depth_loop(stop).await });
        }
        shutdown.await;
        tracing::info!("shutting down: no new work is claimed");
        let _ = stop_tx.send(true);
        while tasks.join_next().await.is_some() {}
    }

    /// One worker: claim, handle, repeat; idle until woken or polled.
    async fn worker(&self, n: usize, mut stop: watch::Receiver<bool>) {
        let name = format!("{}/{}", self.config.worker_name, n);
        while !*stop.borrow() {
            // The lease starts no earlier than the claim is asked for.
            let asked = Instant::now();
            match self.queue.claim(&name).await {
                Ok(Some(claim)) => self.handle(claim, asked, &mut stop).await,
                Ok(None) => {
                    tokio::select! {
                        _ = self.queue.changed() => {}
                        _ = tokio::time::sleep(self.config.poll_interval) => {}
                        _ = stop.changed() => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming work failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.poll_interval) => {}
                        _ = stop.changed() => {}
                    }
                }
            }
        }
    }

    /// Handles one claim while renewing its lease; gives it back untouched
    /// when the shutdown grace runs out, and drops the work when the lease
    /// was lost or could not be renewed in time (another worker may hold the
    /// key, or soon could): dropping the handler's future rolls back what it
    /// had not committed.
    async fn handle(
        &self,
        claim: Claim<Q::Key>,
        claimed_at: Instant,
        stop: &mut watch::Receiver<bool>,
    ) {
        let started = Instant::now();
        // The handler may fill in `full_name`, what people call the key, so
        // the lines below say which repository they are about.
        let span = tracing::info_span!("reconcile", full_name = tracing::field::Empty);
        let times = LeaseTimes {
            lease: self.config.lease,
        };
        let ended = {
            let work = self.reconcile(&claim).instrument(span.clone());
            let stopped = async {
                while !*stop.borrow() {
                    if stop.changed().await.is_err() {
                        break;
                    }
                }
                tokio::time::sleep(self.config.shutdown_grace).await;
            };
            tokio::select! {
                r = work => Ok(Some(r)),
                abandon = lease::keep(&*self.queue, &claim, claimed_at, times) => Err(abandon),
                _ = stopped => Ok(None),
            }
            // An unfinished attempt is dropped here, before the claim is
            // ended or given up: what it had not committed is rolled back.
        };
        let elapsed = started.elapsed().as_secs_f64();
        match ended {
            Ok(result) => self.finish(&claim, result, elapsed).instrument(span).await,
            Err(abandon) => {
                self.abandoned(&claim, abandon, elapsed)
                    .instrument(span)
                    .await
            }
        }
    }

    /// Ends the claim as the attempt's result says: released (`None`, the
    /// shutdown grace ran out), done, or failed with the next retry's delay.
    async fn finish(
        &self,
        claim: &Claim<Q::Key>,
        result: Option<Result<&'static str, Failure>>,
        elapsed: f64,
    ) {
        let duration_ms = (elapsed * 1000.0) as u64;
        let ended = match result {
            None => {
                tracing::warn!(key = %claim.key, "shutdown grace ran out; giving the key back");
                self.queue.release(claim).await
            }
            Some(Ok(outcome)) => {
                self.metrics.observe(outcome, elapsed);
                tracing::info!(key = %claim.key, outcome, duration_ms, "reconciled");
                self.queue.done(claim).await
            }
            Some(Err(failure)) => {
                let delay = failure
                    .retry_after
                    .unwrap_or_else(|| self.config.backoff.delay(claim.attempts.saturating_add(1)));
                self.metrics.observe("error", elapsed);
                self.metrics.queue_retries.inc();
                tracing::warn!(
                    key = %claim.key,
                    outcome = "error",
                    duration_ms,
                    attempts = claim.attempts + 1,
                    retry_in_ms = delay.as_millis() as u64,
                    error = %failure,
                    "reconcile failed",
                );
                self.queue.fail(claim, &failure.message, delay).await
            }
        };
        if let Err(e) = ended {
            // The lease runs out by itself, so the key is not lost.
            tracing::warn!(key = %claim.key, error = %e, "could not end the claim");
        }
    }

    /// Says why an attempt was dropped. The claim is left alone: either it
    /// is another worker's now, or the queue cannot be reached and the lease
    /// runs out by itself.
    async fn abandoned(&self, claim: &Claim<Q::Key>, why: Abandon, elapsed: f64) {
        self.metrics.observe("abandoned", elapsed);
        match why {
            Abandon::Lost => {
                tracing::warn!(key = %claim.key, "lease lost; dropping this attempt");
            }
            Abandon::Unconfirmed { since } => tracing::warn!(
                key = %claim.key,
                unrenewed_ms = since.as_millis() as u64,
                lease_ms = self.config.lease.as_millis() as u64,
                "lease could not be renewed; dropping this attempt before it runs out",
            ),
        }
    }

    async fn reconcile(&self, claim: &Claim<Q::Key>) -> Result<&'static str, Failure> {
        let state = self.storage.get(&claim.key, claim.hint.as_deref()).await;
        self.handler.apply_claimed(claim, state).await
    }

    /// Asks every `listing_check` whether this replica should list now.
    async fn listing_loop(&self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            match self.queue.take_listing(self.config.resync_interval).await {
                Ok(true) => {
                    tokio::select! {
                        _ = self.list_and_sweep() => {}
                        _ = stop.changed() => return,
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not check the listing schedule"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.listing_check) => {}
                _ = stop.changed() => {}
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
                tracing::warn!(partition = %partition.name, error = %e, "listing incomplete; not swept");
                continue;
            }
            match self.tracker.tracked(&partition.name).await {
                Ok(tracked) => {
                    let total = tracked.len();
                    let mut gone: Vec<Q::Key> =
                        tracked.into_iter().filter(|k| !keys.contains(k)).collect();
                    gone.sort();
                    gone.dedup();
                    let listed: Vec<Q::Key> = keys.into_iter().collect();
                    let gone = match self
                        .tracker
                        .guard_sweep(&partition.name, total, &listed, gone)
                        .await
                    {
                        Ok(allowed) => allowed,
                        Err(e) => {
                            tracing::warn!(partition = %partition.name, error = %e, "sweep guard failed; not swept");
                            continue;
                        }
                    };
                    swept += gone.len();
                    self.enqueue(gone.into_iter().map(Enqueue::fresh).collect())
                        .await;
                }
                Err(e) => {
                    tracing::warn!(partition = %partition.name, error = %e, "cannot read tracked keys; not swept")
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
    async fn depth_loop(&self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            if let Ok(depth) = self.queue.depth().await {
                self.metrics.queue_depth.set(depth as i64);
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                _ = stop.changed() => {}
            }
        }
    }
}
