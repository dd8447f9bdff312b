//! One worker's batch: the keys it claimed at once, read from the storage
//! together, then applied one by one, each ending as its own result says.
//!
//! The leases of the whole batch are renewed together while it runs
//! ([`super::lease`]). When one is lost, or no renewal succeeded for two
//! thirds of the lease, the batch is abandoned at once, before another
//! worker can hold its keys; each key's apply commits only while that key's
//! claim is live ([`Handler::apply_claimed`]). On shutdown the batch has the
//! grace to finish; what did not finish is given back, ready at once for
//! another replica.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use tracing::{Instrument, Span};

use super::lease::{self, Abandon, LeaseTimes};
use super::queue::{Claim, ListingSchedule, WorkQueue};
use super::runner::Controller;
use super::traits::{Failure, Handler, Lister, NoState, Storage, Tracker};
use crate::shutdown::Shutdown;

/// What became of one key of a batch: the handler's result, the time it
/// took (the batch's read plus its own apply), and its log span.
type Outcome = (Result<&'static str, Failure>, f64, Span);

/// Why a batch stopped before every key had an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Every key was handled.
    None,
    /// A lease was lost or could not be renewed in time.
    Abandoned(Abandon),
    /// The shutdown grace ran out.
    Grace,
}

impl<Q, L, T, S, H> Controller<Q, L, T, S, H>
where
    Q: WorkQueue + ListingSchedule,
    L: Lister<Key = Q::Key>,
    T: Tracker<Key = Q::Key>,
    S: Storage<Key = Q::Key>,
    H: Handler<Key = Q::Key, State = S::State>,
{
    /// Handles `claims`, asked for at `claimed_at`, while renewing their
    /// leases; `read_slot` (none for keys read from their hints) is given
    /// up as soon as the storage has answered, so another worker may read.
    pub(super) async fn handle_batch(
        &self,
        claims: Vec<Claim<Q::Key>>,
        claimed_at: Instant,
        read_slot: Option<OwnedSemaphorePermit>,
        stop: &Shutdown,
    ) {
        let started = Instant::now();
        let times = LeaseTimes {
            lease: self.config.lease,
        };
        let outcomes: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; claims.len()]);
        let mut work = Box::pin(self.run_batch(&claims, read_slot, &outcomes));
        let stopped = async {
            stop.wait().await;
            tokio::time::sleep(self.config.shutdown_grace).await;
        };
        let cut = tokio::select! {
            () = &mut work => Cut::None,
            abandon = lease::keep(&*self.queue, &claims, claimed_at, times) => Cut::Abandoned(abandon),
            () = stopped => Cut::Grace,
        };
        // The attempt in flight, if any, is dropped here (its transaction
        // rolls back), so nothing runs on once the claims are ended.
        drop(work);
        let outcomes = outcomes
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Cut::Abandoned(why) = cut {
            self.abandoned(&claims, &outcomes, why, started.elapsed().as_secs_f64());
        }
        self.finish_batch(&claims, outcomes, cut).await;
    }

    /// Reads every key at once, then applies each in turn, recording each
    /// outcome as soon as it is known (a cut batch keeps what finished).
    async fn run_batch(
        &self,
        claims: &[Claim<Q::Key>],
        read_slot: Option<OwnedSemaphorePermit>,
        outcomes: &Mutex<Vec<Option<Outcome>>>,
    ) {
        let items: Vec<(Q::Key, Option<&[u8]>)> = claims
            .iter()
            .map(|c| (c.key.clone(), c.hint.as_deref().or(c.scope.as_deref())))
            .collect();
        let read_started = Instant::now();
        let mut states = self.storage.get_many(&items).await;
        drop(read_slot);
        states.truncate(claims.len());
        while states.len() < claims.len() {
            states.push(Err(Failure::new(NoState)));
        }
        let together = self.handler.apply_together(claims, &states).await;
        // Every key of the batch waited for the whole read (and for what
        // was applied together).
        let read_time = read_started.elapsed();
        for (n, (claim, state)) in claims.iter().zip(states).enumerate() {
            if let Some(Some(applied)) = together.get(n) {
                let span = tracing::info_span!("reconcile", full_name = applied.name);
                if let Some(slot) = lock(outcomes).get_mut(n) {
                    *slot = Some((Ok(applied.outcome), read_time.as_secs_f64(), span));
                }
                continue;
            }
            // The handler may fill in `full_name`, what people call the key,
            // so the lines about it say which repository they are about.
            let span = tracing::info_span!("reconcile", full_name = tracing::field::Empty);
            let started = Instant::now();
            let result = self
                .handler
                .apply_claimed(claim, state)
                .instrument(span.clone())
                .await;
            let elapsed = (read_time + started.elapsed()).as_secs_f64();
            if let Some(slot) = lock(outcomes).get_mut(n) {
                *slot = Some((result, elapsed, span));
            }
        }
    }

    /// Says why the batch was dropped, and counts each key it left
    /// unfinished as `abandoned`.
    fn abandoned(
        &self,
        claims: &[Claim<Q::Key>],
        outcomes: &[Option<Outcome>],
        why: Abandon,
        elapsed: f64,
    ) {
        let unfinished: Vec<String> = claims
            .iter()
            .zip(outcomes)
            .filter(|(_, outcome)| outcome.is_none())
            .map(|(claim, _)| claim.key.to_string())
            .collect();
        for _ in &unfinished {
            self.metrics.observe("abandoned", elapsed);
        }
        let keys = unfinished.join(",");
        match why {
            Abandon::Lost => {
                tracing::warn!(%keys, "lease lost; dropping the rest of this batch");
            }
            Abandon::Unconfirmed { since } => tracing::warn!(
                %keys,
                unrenewed_ms = since.as_millis() as u64,
                lease_ms = self.config.lease.as_millis() as u64,
                "leases could not be renewed; dropping the rest of this batch before they run out",
            ),
        }
    }

    /// Ends every claim of the batch as its outcome says: done (together),
    /// failed with the next retry's delay, or deferred. A key the batch did
    /// not reach is given back, except when no renewal could confirm the
    /// leases: the queue may be unreachable, and the leases are left to run
    /// out, so no other worker starts on a key before the dropped attempt
    /// has had a third of a lease to roll back.
    async fn finish_batch(
        &self,
        claims: &[Claim<Q::Key>],
        outcomes: Vec<Option<Outcome>>,
        cut: Cut,
    ) {
        let mut done = Vec::new();
        for (claim, outcome) in claims.iter().zip(outcomes) {
            let Some((result, elapsed, span)) = outcome else {
                match cut {
                    Cut::Abandoned(Abandon::Unconfirmed { .. }) => {}
                    Cut::Grace => {
                        tracing::warn!(key = %claim.key, "shutdown grace ran out; giving the key back");
                        self.end(claim, self.queue.release(claim).await);
                    }
                    // After a lost lease this is a no-op for the lost claims
                    // and frees the others, whose leases were just renewed.
                    Cut::Abandoned(Abandon::Lost) | Cut::None => {
                        self.end(claim, self.queue.release(claim).await);
                    }
                }
                continue;
            };
            let duration_ms = (elapsed * 1000.0) as u64;
            match result {
                Ok(outcome) => {
                    self.metrics.observe(outcome, elapsed);
                    span.in_scope(
                        || tracing::info!(key = %claim.key, outcome, duration_ms, "reconciled"),
                    );
                    done.push(claim.clone());
                }
                Err(failure) if failure.deferred => {
                    let delay = failure.retry_after.unwrap_or(Duration::ZERO);
                    self.metrics.observe("waiting", elapsed);
                    span.in_scope(|| {
                        tracing::info!(
                            key = %claim.key,
                            outcome = "waiting",
                            duration_ms,
                            retry_in_ms = delay.as_millis() as u64,
                            reason = %failure,
                            "reconcile deferred",
                        )
                    });
                    self.end(claim, self.queue.defer(claim, delay).await);
                }
                Err(failure) => {
                    let delay = failure.retry_after.unwrap_or_else(|| {
                        self.config.backoff.delay(claim.attempts.saturating_add(1))
                    });
                    self.metrics.observe("error", elapsed);
                    self.metrics.queue_retries.inc();
                    span.in_scope(|| {
                        tracing::warn!(
                            key = %claim.key,
                            outcome = "error",
                            duration_ms,
                            attempts = claim.attempts + 1,
                            retry_in_ms = delay.as_millis() as u64,
                            error = %failure,
                            "reconcile failed",
                        )
                    });
                    let ended = self.queue.fail(claim, &failure.message(), delay).await;
                    self.end(claim, ended);
                }
            }
        }
        if let Err(e) = self.queue.done_many(&done).await {
            // The leases run out by themselves, so the keys are not lost.
            tracing::warn!(keys = done.len(), error = %e, "could not end the claims");
        }
    }

    fn end<E: std::fmt::Display>(&self, claim: &Claim<Q::Key>, ended: Result<(), E>) {
        if let Err(e) = ended {
            // The lease runs out by itself, so the key is not lost.
            tracing::warn!(key = %claim.key, error = %e, "could not end the claim");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
