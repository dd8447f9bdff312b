//! The four roles a resource plugs into the controller (lister, tracker,
//! storage, handler), as in the Kubernetes controller pattern.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::queue::{Claim, Enqueue};

/// A failed attempt, with the wait the remote side asked for, if any.
///
/// `retry_after` overrides the controller's backoff (a `Retry-After` header
/// or a rate-limit reset); without it the per-key exponential backoff applies.
/// The cause stays typed (`source()` walks it); what is recorded and shown is
/// its one-line rendering, [`Failure::message`].
#[derive(Debug, Clone)]
pub struct Failure {
    cause: Arc<dyn std::error::Error + Send + Sync>,
    pub retry_after: Option<Duration>,
    /// The work never started: a budget it needs is spent until a known
    /// time (a rate limit's window). Not a failure of the key: its attempts
    /// are not counted, and it is simply deferred for `retry_after`.
    pub deferred: bool,
}

impl Failure {
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            cause: Arc::new(cause),
            retry_after: None,
            deferred: false,
        }
    }

    /// The work cannot start before `wait` has passed (see [`Self::deferred`]).
    pub fn deferred(cause: impl std::error::Error + Send + Sync + 'static, wait: Duration) -> Self {
        Self {
            retry_after: Some(wait),
            deferred: true,
            ..Self::new(cause)
        }
    }

    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// What the queue records and the pages show for this attempt.
    pub fn message(&self) -> String {
        self.cause.to_string()
    }
}

/// Two failures are alike when they read the same and ask for the same wait.
impl PartialEq for Failure {
    fn eq(&self, other: &Self) -> bool {
        self.message() == other.message()
            && self.retry_after == other.retry_after
            && self.deferred == other.deferred
    }
}

impl Eq for Failure {}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.cause.fmt(f)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.cause)
    }
}

/// A storage answered fewer states than the keys it was asked for: a bug
/// on its side, reported on the key rather than lost.
#[derive(Debug, thiserror::Error)]
#[error("the storage gave no state for this key")]
pub struct NoState;

/// A failure a test describes in words, standing in for a remote error.
#[cfg(any(test, feature = "testing"))]
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Scripted(pub String);

#[cfg(any(test, feature = "testing"))]
impl Failure {
    /// A failure for tests: `text` is what the real error would have said.
    pub fn scripted(text: impl Into<String>) -> Self {
        Self::new(Scripted(text.into()))
    }

    /// This failure as a wait for a spent budget (see [`Self::deferred`]).
    pub fn deferred_for(self, wait: Duration) -> Self {
        Self {
            retry_after: Some(wait),
            deferred: true,
            ..self
        }
    }
}

/// What a listing found in one partition (an installation, a folder),
/// which either completed or failed as a whole. Only complete partitions
/// are swept.
#[derive(Debug, Clone)]
pub struct Listed<K, P> {
    /// The partition, as the [`Tracker`] knows it.
    pub partition: P,
    /// Every key found, each with the hint the lister fetched alongside.
    pub items: Vec<Enqueue<K>>,
    /// `Err` when any page failed: then nothing in this partition is swept.
    pub outcome: Result<(), Failure>,
}

/// What a whole listing found, partition by partition.
pub type Listing<K, P> = Result<Vec<Listed<K, P>>, Failure>;

/// Where a lister hands over what it found while it is still listing.
pub type Found<K> = tokio::sync::mpsc::UnboundedSender<Vec<Enqueue<K>>>;

/// Produces every key that exists now (the periodic, org-wide listing).
pub trait Lister: Send + Sync + 'static {
    type Key: Clone + Send + Sync;
    /// What the listing is split by (shown in the log).
    type Partition: fmt::Display + Send + Sync;
    fn list(&self) -> impl Future<Output = Listing<Self::Key, Self::Partition>> + Send;

    /// Like [`Lister::list`], but sends each batch to `found` as soon as it
    /// is read, so workers start on the first page while later pages are
    /// still coming. The partitions returned still hold every item (the
    /// sweep needs the whole set); the controller enqueues what was sent.
    /// By default everything is sent at the end.
    fn list_streaming(
        &self,
        found: Found<Self::Key>,
    ) -> impl Future<Output = Listing<Self::Key, Self::Partition>> + Send {
        async move {
            let partitions = self.list().await?;
            for partition in &partitions {
                // The receiver only goes away when the controller stops.
                let _ = found.send(partition.items.clone());
            }
            Ok(partitions)
        }
    }
}

/// Knows which keys the controller already manages, so a complete listing
/// can find the ones that disappeared (the sweep).
pub trait Tracker: Send + Sync + 'static {
    type Key: Send + Sync;
    /// The partitions it tracks keys by: the [`Lister`]'s.
    type Partition: Send + Sync;
    fn tracked(
        &self,
        partition: &Self::Partition,
    ) -> impl Future<Output = Result<Vec<Self::Key>, Failure>> + Send;

    /// Decides which of the keys that a complete listing of `partition` no
    /// longer returned (`gone`, out of `tracked` keys) are swept now, and
    /// learns which keys were listed. A deletion guard holds them here when
    /// too many vanish at once; by default every one is swept.
    fn guard_sweep(
        &self,
        partition: &Self::Partition,
        tracked: usize,
        listed: &[Self::Key],
        gone: Vec<Self::Key>,
    ) -> impl Future<Output = Result<Vec<Self::Key>, Failure>> + Send {
        let _ = (partition, tracked, listed);
        async move { Ok(gone) }
    }
}

/// Turns a key into the current observed state of the resource.
pub trait Storage: Send + Sync + 'static {
    type Key: Send + Sync;
    type State: Send;
    /// `hint` is what the lister fetched with the key, when still valid.
    fn get(
        &self,
        key: &Self::Key,
        hint: Option<&[u8]>,
    ) -> impl Future<Output = Result<Self::State, Failure>> + Send;

    /// The states of many keys at once, in the order of `items` (each key
    /// with its hint), so a source can answer a worker's whole batch with
    /// one request. Each key succeeds or fails on its own. By default one
    /// [`Storage::get`] after another.
    fn get_many(
        &self,
        items: &[(Self::Key, Option<&[u8]>)],
    ) -> impl Future<Output = Vec<Result<Self::State, Failure>>> + Send {
        async move {
            let mut states = Vec::with_capacity(items.len());
            for (key, hint) in items {
                states.push(self.get(key, *hint).await);
            }
            states
        }
    }

    /// How fast reads that need no hint may go: `None` (the default) for
    /// a storage whose reads cost nothing that runs out, such as local
    /// files; a source with a request budget spreads a steady trickle of
    /// triggers over fewer, larger reads (see [`super::pace`]). Asked when
    /// the controller is built (`None` then: never paced) and again before
    /// each paced read, so the pace can follow what the source learns of
    /// its budget (`None` later: the first pace).
    fn read_pace(&self) -> Option<super::pace::ReadPace> {
        None
    }
}

/// Makes the managed world match the observed state. Must be idempotent.
///
/// It also receives the storage's failures, so it can record them (for
/// instance as an `error` status) before the controller retries.
pub trait Handler: Send + Sync + 'static {
    type Key: Send + Sync;
    type State: Send;
    /// On success, a short outcome label for metrics and logs (`synced`, …).
    fn apply(
        &self,
        key: &Self::Key,
        state: Result<Self::State, Failure>,
    ) -> impl Future<Output = Result<&'static str, Failure>> + Send;

    /// [`Handler::apply`] for an attempt that holds `claim`; the controller
    /// calls this one. A handler whose writes commit where the queue keeps
    /// its claims overrides it to commit only while `claim` is still live
    /// (fencing): a worker can lose its lease without having noticed yet,
    /// and must not then write over the work of the worker that took it.
    fn apply_claimed(
        &self,
        claim: &Claim<Self::Key>,
        state: Result<Self::State, Failure>,
    ) -> impl Future<Output = Result<&'static str, Failure>> + Send {
        self.apply(&claim.key, state)
    }

    /// Applies together, before a batch's keys are applied one by one,
    /// those whose states can be (a read that changes nothing but times
    /// costs one statement for the batch instead of one each): for each
    /// claim, its outcome when it was applied here. The controller calls it
    /// once per batch, and [`Handler::apply_claimed`] for each key left.
    /// The default applies nothing here.
    fn apply_together(
        &self,
        claims: &[Claim<Self::Key>],
        _states: &[Result<Self::State, Failure>],
    ) -> impl Future<Output = Vec<Option<AppliedTogether>>> + Send {
        let none = vec![None; claims.len()];
        async move { none }
    }
}

/// A key applied with others of its batch ([`Handler::apply_together`]):
/// its outcome, and what people call it, for its log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedTogether {
    pub outcome: &'static str,
    pub name: Option<String>,
}
