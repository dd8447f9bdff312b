//! The cap on long polls of the change feed (`ROSTER_LONG_POLLS`), and a
//! count of the feed's reads.
//!
//! A waiting poll costs the server a connection and a task but no database
//! work (the commit wakes it); the cap bounds the connections. A poll over
//! the cap is answered at once with what there is, as if its wait were
//! zero, so a client that follows the feed still gets every change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use crate::registry::changes::wake::DEFAULT_LONG_POLLS;

/// Shared by every request of the feed; cheap to clone.
#[derive(Debug, Clone)]
pub struct LongPolls {
    permits: Arc<Semaphore>,
    limit: usize,
    reads: Arc<AtomicU64>,
}

impl LongPolls {
    /// At most `limit` polls wait at once.
    pub fn new(limit: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            reads: Arc::new(AtomicU64::new(0)),
        }
    }

    /// A place to wait, or `None` when `limit` polls wait already. The
    /// place is given back when the permit is dropped.
    pub fn try_wait(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// Polls waiting now.
    pub fn waiting(&self) -> usize {
        self.limit - self.permits.available_permits()
    }

    /// Counts one read of the log by the feed.
    pub(crate) fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads of the log made by the feed so far: what tests and benchmarks
    /// compare with the number of polls, to show waiting costs no reads.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

impl Default for LongPolls {
    fn default() -> Self {
        Self::new(DEFAULT_LONG_POLLS)
    }
}
