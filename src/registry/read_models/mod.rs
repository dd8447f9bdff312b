//! The registry as its readers see it: the lists, pages and exports the API
//! and the dashboard share (so they never disagree), and the relations
//! between entries, resolved by name when read.

pub(crate) mod cursor;
pub mod entry_query;
pub mod export;
pub mod owner_counts;
pub mod query;
pub mod relations;
mod repo_page;
pub mod repo_query;
mod repo_rows;

pub use repo_rows::{ActiveHold, Hold, Repo, RepoDetail, RepoEvent};
