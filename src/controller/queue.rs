//! The work queue contract every queue implementation keeps.
//!
//! Guarantees, for every key (docs/contract.md#the-reconcile-model):
//! - **dedup**: a key enqueued many times before it is claimed is claimed once;
//! - **exclusive**: at most one claim of a key is live at a time, across every
//!   handle on the same backing store (replicas);
//! - **no lost wake-up**: a key enqueued while claimed becomes ready again when
//!   that claim ends (`done`, `fail` or `release`);
//! - **retry**: `fail` records the attempt and the error and hides the key
//!   until its delay has passed; a later `enqueue` makes it ready at once but
//!   keeps the attempt count, so the next failure backs off further;
//! - **lease**: a claim not renewed within the lease is given up, so a key
//!   claimed by a crashed process is claimed again.
//!
//! The `_many` methods claim, renew and end several keys in one call; each
//! key keeps every guarantee above, as if handled alone.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

/// One key to enqueue, with an optional hint the lister already fetched.
///
/// A hint lets a worker skip a read the lister already paid for. It is only
/// kept while no trigger without a hint arrives for the same key: a newer
/// trigger means the hint may be stale, so the worker must read afresh. A
/// hint that arrives while the key is claimed steers the run after it, on
/// the same terms; whether that run in flight applied something newer than
/// the hint is for the storage to tell (the GitHub source compares the
/// hint's read time with the registry's `observed_at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueue<K> {
    pub key: K,
    pub hint: Option<Vec<u8>>,
    /// What asked for the run, told to the worker with the claim.
    pub trigger: Trigger,
}

impl<K> Enqueue<K> {
    /// A trigger that says "something changed": the worker reads afresh.
    pub fn fresh(key: K) -> Self {
        Self::because(key, Trigger::Other)
    }

    /// Like [`Enqueue::fresh`], saying what asked for the run.
    pub fn because(key: K, trigger: Trigger) -> Self {
        Self {
            key,
            hint: None,
            trigger,
        }
    }
}

/// What asked for a key's run, so that what the run writes can say why,
/// and when it is claimed.
///
/// The queue keeps one trigger per pending run: when several arrive before
/// the run starts, the most telling one wins ([`Trigger::merge`]: a push
/// says more than a resync, a resync more than an event, and anything more
/// than a listing). A trigger that arrives while the key is claimed belongs
/// to the run that follows.
///
/// Listing work waits: keys whose trigger is [`Trigger::Listing`] are
/// claimed after every other ready key, except that one claim in ten goes
/// to the listing work that has waited longest, so neither starves
/// (docs/contract.md#the-reconcile-model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trigger {
    /// Anything not named below (a name another entry released, a folder
    /// that changed on disk, a released hold).
    #[default]
    Other,
    /// The periodic listing found the key.
    Listing,
    /// A webhook other than a push (a rename, an installation change).
    Event,
    /// Someone asked for a resync (API or dashboard).
    Resync,
    /// A new commit on the default branch.
    Push,
}

impl Trigger {
    /// Every trigger, in rank order (the index is the stored code).
    pub const ALL: [Trigger; 5] = [
        Trigger::Other,
        Trigger::Listing,
        Trigger::Event,
        Trigger::Resync,
        Trigger::Push,
    ];

    /// The code a store keeps; larger codes win a merge.
    pub fn code(self) -> i16 {
        self as i16
    }

    /// The trigger of a run asked for by both `self` and `other`: the
    /// larger, except that a listing yields to any other trigger, so a
    /// listing key that another trigger asks for takes that trigger's rank.
    pub fn merge(self, other: Trigger) -> Trigger {
        match (self, other) {
            (Trigger::Listing, other) | (other, Trigger::Listing) => other,
            (a, b) => a.max(b),
        }
    }

    /// Whether only a listing asked for the run: such work is claimed last.
    pub fn is_listing(self) -> bool {
        self == Trigger::Listing
    }

    /// The trigger of a stored code; [`Trigger::Other`] for a code this
    /// version does not know.
    pub fn from_code(code: i16) -> Self {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
            .unwrap_or_default()
    }
}

/// A live claim on one key, returned by [`WorkQueue::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim<K> {
    pub key: K,
    /// Failed attempts so far (0 on a first try); drives the backoff.
    pub attempts: u32,
    /// The hint stored with the key, if still valid.
    pub hint: Option<Vec<u8>>,
    /// What the trigger knew of where the change lies (a push's touched
    /// project files): unlike a hint, a read is still needed, but the
    /// storage may read less. Handed to the storage when there is no hint.
    pub scope: Option<Vec<u8>>,
    /// What asked for this run (see [`Trigger`] for how several merge).
    pub trigger: Trigger,
    /// Identifies this claim, so a stale holder cannot end a newer claim.
    pub token: String,
}

/// What a queue knows about one key, for the API and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemStatus {
    pub attempts: u32,
    pub last_error: Option<String>,
    /// How long until the key may be claimed (zero when ready now).
    pub ready_in: Duration,
    pub claimed: bool,
}

/// A durable, deduplicating, exclusive work queue of keys.
///
/// Implementations: [`super::memory_queue::MemoryQueue`] (tests, single
/// process) and the PostgreSQL queue (`crate::db::queue::PgQueue`). Both pass
/// [`super::conformance`].
pub trait WorkQueue: Send + Sync + 'static {
    type Key: Clone + Eq + Hash + Ord + Debug + Display + Send + Sync + 'static;
    /// Why an operation failed: always the backing store, never the
    /// caller. Each queue names its own, so the core knows nothing of
    /// what a store is made of (a database, a process's memory).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Adds keys (upsert): waiting keys stay once, claimed keys run again later.
    fn enqueue(
        &self,
        items: Vec<Enqueue<Self::Key>>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Claims one ready key for `worker`, or `None` when nothing is ready.
    fn claim(
        &self,
        worker: &str,
    ) -> impl Future<Output = Result<Option<Claim<Self::Key>>, Self::Error>> + Send;

    /// Claims up to `max` ready keys that need a read (no hint), in claim
    /// order, leaving keys whose read is in hand to other workers: what
    /// joins a read that waited for the storage's pace. By default any
    /// ready keys, as [`WorkQueue::claim_many`] takes them.
    fn claim_reads(
        &self,
        worker: &str,
        max: usize,
    ) -> impl Future<Output = Result<Vec<Claim<Self::Key>>, Self::Error>> + Send {
        self.claim_many(worker, max)
    }

    /// Extends the lease of a live claim; `false` when the claim was lost.
    fn renew(
        &self,
        claim: &Claim<Self::Key>,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Ends a claim after success: forgets the key unless it was enqueued
    /// meanwhile, in which case it is ready again at once with attempts reset.
    fn done(
        &self,
        claim: &Claim<Self::Key>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Ends a claim after failure: attempts + 1, `error` kept, hidden for `delay`.
    fn fail(
        &self,
        claim: &Claim<Self::Key>,
        error: &str,
        delay: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Gives a claim back untouched (shutdown): ready again at once.
    fn release(
        &self,
        claim: &Claim<Self::Key>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Ends a claim without counting an attempt: the work could not start
    /// yet (a rate limit's window), so attempts and error stay as they were
    /// and the key is hidden for `delay`. A later `enqueue` makes it ready
    /// at once, as after `fail`.
    fn defer(
        &self,
        claim: &Claim<Self::Key>,
        delay: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Claims up to `max` ready keys for `worker` at once: fewer, or none,
    /// when fewer are ready. Each claim is an ordinary claim, renewed and
    /// ended alone or with the other `_many` methods. By default one
    /// [`WorkQueue::claim`] after another; a store that can should take
    /// them in one round trip.
    fn claim_many(
        &self,
        worker: &str,
        max: usize,
    ) -> impl Future<Output = Result<Vec<Claim<Self::Key>>, Self::Error>> + Send {
        async move {
            let mut claims = Vec::new();
            while claims.len() < max {
                match self.claim(worker).await {
                    Ok(Some(claim)) => claims.push(claim),
                    Ok(None) => break,
                    // What is claimed already is the caller's to end.
                    Err(_) if !claims.is_empty() => break,
                    Err(e) => return Err(e),
                }
            }
            Ok(claims)
        }
    }

    /// Extends the leases of `claims`; for each, in order, whether it is
    /// still held (`false`: lost, as [`WorkQueue::renew`] says).
    fn renew_many(
        &self,
        claims: &[Claim<Self::Key>],
    ) -> impl Future<Output = Result<Vec<bool>, Self::Error>> + Send {
        async move {
            let mut kept = Vec::with_capacity(claims.len());
            for claim in claims {
                kept.push(self.renew(claim).await?);
            }
            Ok(kept)
        }
    }

    /// Ends `claims` after success, each as [`WorkQueue::done`] would; a
    /// failure to end one does not keep the others from ending.
    fn done_many(
        &self,
        claims: &[Claim<Self::Key>],
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async move {
            let mut first_error = None;
            for claim in claims {
                if let Err(e) = self.done(claim).await {
                    first_error.get_or_insert(e);
                }
            }
            first_error.map_or(Ok(()), Err)
        }
    }

    /// Resolves when a key may have become ready (a wake-up hint, may be
    /// spurious); workers also poll, so a missed wake-up only costs latency.
    fn changed(&self) -> impl Future<Output = ()> + Send;

    /// Number of keys waiting or claimed.
    fn depth(&self) -> impl Future<Output = Result<u64, Self::Error>> + Send;

    /// What the queue holds for `key`, `None` when it holds nothing.
    fn status(
        &self,
        key: &Self::Key,
    ) -> impl Future<Output = Result<Option<ItemStatus>, Self::Error>> + Send;
}

/// Decides which replica runs each periodic listing, so that one listing
/// runs per period however many replicas there are.
///
/// A queue's own: the listing's turn is kept where the keys are, and fails
/// as the queue does.
pub trait ListingSchedule: WorkQueue {
    /// Takes the listing if one is due (none started within `interval`, or
    /// one was requested); `true` means this caller must run it now.
    fn take_listing(
        &self,
        interval: Duration,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Asks for a listing as soon as possible, on whichever replica.
    fn request_listing(&self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Records that a listing completed everywhere without error, so people
    /// can see how fresh the last full picture is. Nothing by default.
    fn listing_finished(&self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Resolves when this process asked for a listing, so the replica
    /// that took the request checks at once rather than at its next
    /// `listing_check`. Never, by default: the periodic check finds it.
    fn listing_asked(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}
