//! A [`WorkQueue`] held in process memory, for tests and a single process.
//!
//! Every time comes from [`tokio::time::Instant`], so the queue follows
//! tokio's paused clock: tests that wait out a lease or a backoff run in no
//! real time. Clones are handles on the same queue (like replicas sharing one
//! database), which is how the conformance suite exercises exclusivity.

use std::collections::{BTreeSet, HashMap};
use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::controller::queue::{Claim, Enqueue, ItemStatus, ListingSchedule, Trigger, WorkQueue};

mod state;
use state::{lane, merge_hint};

/// Longest delay a failure may ask for; keeps instant arithmetic in range.
const MAX_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// An in-memory, deduplicating, exclusive work queue with leases.
pub struct MemoryQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for MemoryQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<K> {
    /// How long a claim lives unless renewed.
    lease: Duration,
    state: Mutex<State<K>>,
    /// Woken whenever a key may have become ready.
    changed: Notify,
}

struct State<K> {
    /// Every key the queue holds, waiting or claimed.
    items: HashMap<K, Item>,
    /// Unclaimed keys, ordered by when they become ready, in two lanes:
    /// [`FIRST`] and [`LISTING`] work (see [`Trigger`]).
    /// Invariant: `(t, k)` is in lane `lane(items[k].trigger)` iff
    /// `items[k]` has no claim and `items[k].not_before == t`.
    waiting: [BTreeSet<(Instant, K)>; 2],
    /// Claimed keys, ordered by when their lease runs out.
    /// Invariant: `(t, k)` is here iff `items[k].claim` is `Some(l)` with
    /// `l.until == t`. `waiting` and `leases` never share a key.
    leases: BTreeSet<(Instant, K)>,
    /// Makes every claim token unique across all handles.
    next_token: u64,
    /// Claims taken so far: every tenth goes to listing work first.
    claims: u64,
    /// When the last listing was taken; `None` before the first.
    listing_started: Option<Instant>,
    /// A listing was asked for and nobody has taken it yet.
    listing_requested: bool,
}

struct Item {
    /// Not claimable before this; only meaningful while unclaimed.
    not_before: Instant,
    /// Failed attempts since the last success.
    attempts: u32,
    last_error: Option<String>,
    /// Hint for the next run. Invariant: `None` whenever a trigger without a
    /// hint is pending (arrived since the key was last claimed).
    hint: Option<Vec<u8>>,
    /// What asked for the next run (the claimed one's while claimed and
    /// not `rerun`).
    trigger: Trigger,
    /// The live (or expired, not yet retaken) claim.
    claim: Option<Lease>,
    /// Enqueued while claimed: must run again when the claim ends.
    /// Invariant: `rerun` implies `claim.is_some()`.
    rerun: bool,
}

struct Lease {
    token: String,
    until: Instant,
}

impl<K> MemoryQueue<K>
where
    K: Clone + Eq + Hash + Ord,
{
    /// An empty queue whose claims expire `lease` after they are taken or
    /// renewed.
    pub fn new(lease: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                lease,
                state: Mutex::new(State {
                    items: HashMap::new(),
                    waiting: [BTreeSet::new(), BTreeSet::new()],
                    leases: BTreeSet::new(),
                    next_token: 0,
                    claims: 0,
                    listing_started: None,
                    listing_requested: false,
                }),
                changed: Notify::new(),
            }),
        }
    }

    /// Ends `claim` while it is still held, the key ready again at
    /// `not_before` and `change` applied to the rest of it; false (and
    /// nothing changed) when the claim was lost.
    fn give_back(
        &self,
        claim: &Claim<K>,
        not_before: Instant,
        change: impl FnOnce(&mut Item),
    ) -> bool {
        let mut state = self.state();
        if !state.holds(&claim.key, &claim.token) {
            return false;
        }
        state.update(&claim.key, |item| {
            item.claim = None;
            item.rerun = false;
            item.not_before = not_before;
            change(item);
        });
        true
    }

    fn state(&self) -> MutexGuard<'_, State<K>> {
        // A panic while holding the lock cannot leave the indexes half
        // updated (no user code runs under it), so a poisoned lock is usable.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Claims the next ready key (with `reads`, the next that needs a read).
    fn claim_one(&self, reads: bool) -> Option<Claim<K>> {
        let now = Instant::now();
        let mut state = self.state();
        let key = state.next_ready(now, reads)?;
        state.next_token += 1;
        state.claims += 1;
        let token = format!("m{}", state.next_token);
        let until = now + self.shared.lease;
        state.update(&key, |item| {
            item.claim = Some(Lease {
                token: token.clone(),
                until,
            });
            item.rerun = false;
            Claim {
                key: key.clone(),
                attempts: item.attempts,
                hint: item.hint.clone(),
                scope: None,
                trigger: item.trigger,
                token,
            }
        })
    }
}

impl<K> WorkQueue for MemoryQueue<K>
where
    K: Clone + Eq + Hash + Ord + Debug + Display + Send + Sync + 'static,
{
    type Key = K;
    /// Memory does not fail.
    type Error = std::convert::Infallible;

    async fn enqueue(&self, items: Vec<Enqueue<K>>) -> Result<(), std::convert::Infallible> {
        let now = Instant::now();
        {
            let mut state = self.state();
            for Enqueue { key, hint, trigger } in items {
                if !state.items.contains_key(&key) {
                    let item = Item {
                        not_before: now,
                        attempts: 0,
                        last_error: None,
                        hint,
                        trigger,
                        claim: None,
                        rerun: false,
                    };
                    state.waiting[lane(trigger)].insert((now, key.clone()));
                    state.items.insert(key, item);
                    continue;
                }
                state.update(&key, |item| {
                    if item.claim.is_some() {
                        // The rerun's hint: this one, while no trigger
                        // without a hint arrived since the claim. Whether
                        // the run in flight applied something newer is the
                        // storage's to tell, as for any hint.
                        item.hint = match item.rerun {
                            false => hint,
                            true => merge_hint(item.hint.take(), hint),
                        };
                        // The claimed run has its trigger; the rerun's is new.
                        item.trigger = match item.rerun {
                            true => item.trigger.merge(trigger),
                            false => trigger,
                        };
                        item.rerun = true;
                    } else {
                        item.trigger = item.trigger.merge(trigger);
                        item.hint = merge_hint(item.hint.take(), hint);
                        item.not_before = item.not_before.min(now);
                    }
                });
            }
        }
        self.shared.changed.notify_waiters();
        Ok(())
    }

    async fn claim(&self, _worker: &str) -> Result<Option<Claim<K>>, std::convert::Infallible> {
        Ok(self.claim_one(false))
    }

    async fn claim_reads(
        &self,
        _worker: &str,
        max: usize,
    ) -> Result<Vec<Claim<K>>, std::convert::Infallible> {
        Ok(std::iter::from_fn(|| self.claim_one(true))
            .take(max)
            .collect())
    }

    async fn renew(&self, claim: &Claim<K>) -> Result<bool, std::convert::Infallible> {
        let until = Instant::now() + self.shared.lease;
        let mut state = self.state();
        if !state.holds(&claim.key, &claim.token) {
            return Ok(false);
        }
        state.update(&claim.key, |item| {
            if let Some(lease) = &mut item.claim {
                lease.until = until;
            }
        });
        Ok(true)
    }

    async fn done(&self, claim: &Claim<K>) -> Result<(), std::convert::Infallible> {
        let now = Instant::now();
        let mut state = self.state();
        if !state.holds(&claim.key, &claim.token) {
            return Ok(());
        }
        let rerun = state.items.get(&claim.key).is_some_and(|i| i.rerun);
        if !rerun {
            state.remove(&claim.key);
            return Ok(());
        }
        state.update(&claim.key, |item| {
            item.claim = None;
            item.rerun = false;
            item.attempts = 0;
            item.last_error = None;
            item.not_before = now;
        });
        drop(state);
        self.shared.changed.notify_waiters();
        Ok(())
    }

    async fn fail(
        &self,
        claim: &Claim<K>,
        error: &str,
        delay: Duration,
    ) -> Result<(), std::convert::Infallible> {
        let not_before = Instant::now() + delay.min(MAX_DELAY);
        // A trigger that arrived during the attempt does not shorten the
        // delay: the key runs again anyway, and the delay may be a rate limit.
        self.give_back(claim, not_before, |item| {
            item.attempts = item.attempts.saturating_add(1);
            item.last_error = Some(error.to_owned());
        });
        Ok(())
    }

    async fn release(&self, claim: &Claim<K>) -> Result<(), std::convert::Infallible> {
        if self.give_back(claim, Instant::now(), |_| {}) {
            self.shared.changed.notify_waiters();
        }
        Ok(())
    }

    async fn defer(
        &self,
        claim: &Claim<K>,
        delay: Duration,
    ) -> Result<(), std::convert::Infallible> {
        // Like `fail`, without counting: a trigger during the claim does not
        // shorten the wait either.
        self.give_back(claim, Instant::now() + delay.min(MAX_DELAY), |_| {});
        Ok(())
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        // Registered now, not at the first poll, so a change made between
        // this call and the first poll still wakes the caller.
        let mut notified = Box::pin(self.shared.changed.notified());
        notified.as_mut().enable();
        notified
    }

    async fn depth(&self) -> Result<u64, std::convert::Infallible> {
        Ok(self.state().items.len() as u64)
    }

    async fn status(&self, key: &K) -> Result<Option<ItemStatus>, std::convert::Infallible> {
        let now = Instant::now();
        let state = self.state();
        Ok(state.items.get(key).map(|item| ItemStatus {
            attempts: item.attempts,
            last_error: item.last_error.clone(),
            ready_in: item.not_before.saturating_duration_since(now),
            claimed: item.claim.as_ref().is_some_and(|l| l.until > now),
        }))
    }
}

impl<K> ListingSchedule for MemoryQueue<K>
where
    K: Clone + Eq + Hash + Ord + Debug + Display + Send + Sync + 'static,
{
    async fn take_listing(&self, interval: Duration) -> Result<bool, std::convert::Infallible> {
        let now = Instant::now();
        let mut state = self.state();
        let due = state.listing_requested
            || state
                .listing_started
                .is_none_or(|at| now.saturating_duration_since(at) >= interval);
        if due {
            state.listing_started = Some(now);
            state.listing_requested = false;
        }
        Ok(due)
    }

    async fn request_listing(&self) -> Result<(), std::convert::Infallible> {
        self.state().listing_requested = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::testing::conformance::{self, QueueHarness};
    use crate::controller::testing::conformance_batch;

    /// Handles on one in-memory queue; a new harness is a new queue.
    struct Harness(MemoryQueue<u32>);

    const LEASE: Duration = Duration::from_secs(60);

    fn harness() -> Harness {
        Harness(MemoryQueue::new(LEASE))
    }

    impl QueueHarness for Harness {
        type Q = MemoryQueue<u32>;

        async fn open(&self) -> MemoryQueue<u32> {
            self.0.clone()
        }

        fn lease(&self) -> Duration {
            LEASE
        }
    }

    /// One test per property of the conformance suites, so a failure names
    /// the property it breaks.
    macro_rules! conformance_tests {
        ($($name:ident => $check:path;)*) => {$(
            #[tokio::test(start_paused = true)]
            async fn $name() {
                $check(&harness()).await;
            }
        )*};
    }

    conformance_tests! {
        dedup_should_claim_a_key_once => conformance::dedup;
        a_claimed_key_should_not_be_claimed_again => conformance::exclusive;
        concurrent_workers_should_never_hold_a_key_twice => conformance::exclusive_under_contention;
        a_key_enqueued_while_claimed_should_run_again => conformance::no_lost_wakeup;
        a_failed_key_should_wait_out_its_delay => conformance::retry;
        an_expired_lease_should_let_another_worker_claim => conformance::lease_expiry;
        renewing_should_keep_a_claim_past_its_lease => conformance::renew_keeps_claim;
        a_released_key_should_be_ready_at_once => conformance::release;
        a_hint_should_be_kept_only_without_a_newer_fresh_trigger => conformance::hints;
        listing_work_should_wait_behind_other_work_but_one_claim_in_ten => conformance::claim_order;
        a_claim_should_carry_the_most_telling_trigger_of_its_run => conformance::triggers;
        keys_should_outlive_the_handle_that_enqueued_them => conformance::durability;
        depth_should_count_waiting_and_claimed_keys => conformance::depth;
        a_listing_should_be_taken_once_per_interval => conformance::listing_once_per_interval;
        a_requested_listing_should_be_taken_at_once => conformance::listing_on_request;
        changed_should_wake_after_an_enqueue_elsewhere => conformance::changed_wakes;
        claim_many_should_take_each_ready_key_once => conformance_batch::claim_many_dedup;
        batches_on_two_handles_should_never_hold_a_key_twice => conformance_batch::claim_many_exclusive;
        done_many_should_run_keys_enqueued_while_claimed_again => conformance_batch::done_many_no_lost_wakeup;
        a_stale_batch_should_not_end_newer_claims => conformance_batch::lost_leases_in_a_batch;
        renew_many_should_keep_claims_past_their_lease => conformance_batch::renew_many_keeps_claims;
        defer_should_wait_without_counting_an_attempt => conformance_batch::defer_waits_without_counting;
    }

    #[tokio::test(start_paused = true)]
    async fn the_whole_suite_should_pass() {
        conformance::run_all(|| async { harness() }).await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_claim_should_not_count_as_claimed() {
        let q = MemoryQueue::<u32>::new(LEASE);
        q.enqueue(vec![Enqueue::fresh(1)]).await.unwrap();
        let claim = q.claim("w").await.unwrap().unwrap();
        tokio::time::advance(LEASE).await;
        let status = q.status(&1).await.unwrap().unwrap();
        assert!(!status.claimed);
        assert_eq!(q.claim("w").await.unwrap().map(|c| c.key), Some(1));
        assert!(!q.renew(&claim).await.unwrap());
    }
}
