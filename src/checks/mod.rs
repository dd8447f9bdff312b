//! Checks on GitHub: the `Roster` check run on a pull request's head
//! commit (a read-only preview of what merging it would do to the
//! registry) and on each new commit of the default branch (what the
//! reconcile found), posted durably and frugally.
//!
//! - `crate::project::verdict` and `crate::project::preview` (pure): a
//!   project file at one commit and a read-only snapshot of the registry
//!   in, the run's conclusion, title, Markdown summary and annotations out;
//!   `crate::registry::check_records::default_branch_check` stores the default branch's run
//!   in the reconcile's transaction.
//! - [`worker`]: takes the waiting requests (written by the webhook),
//!   reads the file at the head commit, evaluates it on a read-only
//!   transaction, stores the intent to post; then posts every pending
//!   intent, retrying with backoff.
//! - [`budget`]: what checks may spend of GitHub's budget, so that pull
//!   requests never starve the sync.
//! - [`mode`]: the `ROSTER_CHECKS` setting.

pub mod budget;
mod failure;
pub mod mode;
pub mod post;
mod several;
pub mod worker;

pub use budget::ChecksBudget;
pub use mode::ChecksMode;
pub use worker::ChecksWorker;
