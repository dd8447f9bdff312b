//! The cap on graph reads at once (`GET /api/v1/graph`,
//! docs/contract.md#bounds).
//!
//! A graph of depth 3 around a project that everything depends on reads
//! every entry of the registry, and anyone who can reach the port may ask
//! for one: 48 at once held the database for 30 s and left a plain read
//! of a project waiting 15 s. So at most [`GRAPH_READS_AT_ONCE`] graphs are
//! read at once, each on one connection of the pool (a fifth of it), and
//! a read over the cap is refused at once with 503 and `Retry-After`
//! rather than queued: a queue would only move the wait to the client.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Graph reads at once by default: each holds one connection of the pool
/// of 20 while it runs (docs/operations.md#bounds).
pub const GRAPH_READS_AT_ONCE: usize = 4;

/// Shared by every graph request; cheap to clone.
#[derive(Debug, Clone)]
pub struct GraphReads {
    permits: Arc<Semaphore>,
}

impl GraphReads {
    /// At most `limit` graphs read at once (a zero is taken as one).
    pub fn new(limit: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limit.max(1))),
        }
    }

    /// A place to read a graph, or `None` when every place is taken; the
    /// place is given back when the permit is dropped.
    pub fn try_start(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }
}

impl Default for GraphReads {
    fn default() -> Self {
        Self::new(GRAPH_READS_AT_ONCE)
    }
}
