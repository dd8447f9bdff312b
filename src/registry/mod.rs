//! The project registry in PostgreSQL: tracked repositories and their status
//! (docs/contract.md#repository-statuses), the entries they own (docs/contract.md#the-project-file), and a short history of
//! reconciles per repository.
//!
//! Four parts, each owning its tables' statements: the reconcile and its
//! tables here (the write side is [`RegistryHandler`], the controller's
//! handler); the read models the API and the dashboard share, so they never
//! disagree ([`read_models`]); what the checks keep ([`check_records`]); and
//! the change log ([`changes`]).

pub mod budget;
pub mod changes;
pub mod check_records;
mod clip;
mod db;
mod decide;
mod entries;
mod entry;
mod entry_owners;
mod entry_relations;
mod error;
mod events;
pub mod file_blobs;
mod file_set;
mod guard;
pub mod handler;
mod holds;
mod judged_files;
mod known;
mod long_way;
mod long_way_together;
mod max_removals;
mod node_ids;
mod not_applied;
mod outcome;
pub mod owner_follow;
pub mod read_models;
mod removal_counts;
mod repos;
pub mod settled_pushes;
mod status;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod touched_files;
pub mod tracker;
mod unchanged;
mod visibility;

pub use crate::db::Page;
pub use clip::{MAX_ERROR_BYTES, MAX_EVENT_BYTES};
pub use db::{RegistryDb, RepoRecord};
pub use entry::Entry;
pub use entry_relations::FileRules;
pub use error::RegistryError;
pub use guard::DeletionGuard;
pub use handler::RegistryHandler;
pub use holds::{active_hold_count, active_holds, release_hold};
pub use known::{ensure_known, ensure_known_with_node_ids, KnownRows};
pub use max_removals::MaxRemovals;
pub use node_ids::record_node_ids;
pub use read_models::cursor::{DEFAULT_LIMIT, MAX_LIMIT};
pub use read_models::entry_query::{get_project, list_projects, ProjectFilter};
pub use read_models::query::status_counts;
pub use read_models::repo_query::{
    get_repo, get_repo_under, list_repos, repo_id_by_full_name, RepoFilter,
};
pub use read_models::{ActiveHold, Hold, Repo, RepoDetail, RepoEvent};
pub use repos::{count_of_installation, known_ids, mark_error};
pub use settled_pushes::{blob_id, Fingerprint, FreePush, FreePushRows};
pub use status::{Status, UnknownStatus};
pub use tracker::{tracked_ids, RegistryTracker};
pub use visibility::record_visibility;
