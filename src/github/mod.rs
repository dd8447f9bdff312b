//! The GitHub App: authentication, the org-wide listing (GraphQL), reading
//! repositories by id (a batch in one GraphQL query, or one over REST),
//! rate limits, and the webhook route.
//!
//! Start from [`GithubSource`]: it hands out the [`GithubLister`] and the
//! [`GithubStorage`] the controller runs.

pub mod auth;
mod batch_read;
mod binary_read;
pub mod blob_query;
pub mod budget_share;
pub mod checks_api;
mod client;
mod contents;
pub mod directory;
pub mod error;
pub mod etag;
pub mod file_query;
mod files_at_commit;
pub mod grants;
pub mod graphql;
pub mod http;
pub mod lister;
mod listing_hint;
pub mod rate_limit;
pub mod read_pace;
pub mod read_query;
mod refusal;
pub mod settings;
pub mod source;
pub mod storage;
pub mod touched_read;
pub mod tree_walk;
mod walked_trees;

pub use auth::Installation;
pub use error::GithubError;
pub use graphql::LIST_REPOSITORIES;
pub use http::Reply;
pub use lister::GithubLister;
pub use read_query::QUERIES;
pub use settings::GithubAppSettings;
pub use source::{GithubOptions, GithubSource};
pub use storage::GithubStorage;

/// The largest project file Roster reads (docs/contract.md#the-project-file: 256 KiB).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
