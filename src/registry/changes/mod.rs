//! The change log: every create, change and removal of a registry entry,
//! with a strictly increasing `seq`, written in the transaction that made
//! the change (see docs/architecture.md, "The change log").
//!
//! - [`record`]: what a reconcile changed; [`append`]: the end of its
//!   transaction, which takes the `seq`s and checks the claim.
//! - [`read`]: the feed after a cursor, an entry's history, recently removed
//!   entries.
//! - [`stream`]: the whole log newest first, filtered, for the dashboard.
//! - [`wake`]: wakes long-polling readers when changes commit.
//! - [`prune`]: retention by age and by size, in small batches.
//! - `patch`: a change stores `after` whole and only the moved fields of
//!   `before`.

pub(crate) mod append;
mod change;
mod patch;
pub mod prune;
pub mod read;
pub(crate) mod record;
pub mod stream;
pub mod wake;

pub use change::{Change, ChangeKind, RemovedDependents};
pub use read::{
    changes_after, head, history, oldest_kept, recently_removed, removed_before, Feed, FeedError,
    Listed,
};
pub use record::Cause;
pub use stream::{stream, StreamFilter};
pub use wake::{ChangeWaker, CHANNEL};
