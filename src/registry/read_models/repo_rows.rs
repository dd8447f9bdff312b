//! What the registry's reads return about repositories: plain rows that
//! the API and the dashboard turn into what they show.

use chrono::{DateTime, Utc};

use crate::registry::entry::Entry;
use crate::registry::Status;
use crate::source::{InstallationId, RepoId};

/// A repository with its status and the names of its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Repo {
    pub id: RepoId,
    /// `owner/name`.
    pub full_name: String,
    pub status: Status,
    pub synced_sha: Option<String>,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    pub attempts: i32,
    /// Names of the entries it owns, sorted.
    pub projects: Vec<String>,
    /// How many of its entries name an owner that is flagged (nobody, a
    /// renamed or a deleted team) or depend on a name no project has: the
    /// repository may read `synced` while its owners or dependencies need
    /// fixing.
    pub warnings: i64,
    /// Set while the deletion guard holds its removal (an active hold).
    pub hold: Option<Hold>,
}

/// A deletion-guard hold on a repository's removal.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub id: i64,
    pub since: DateTime<Utc>,
    pub reason: String,
}

/// An active hold with the repositories it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveHold {
    pub id: i64,
    /// `None` for the local folder source.
    pub installation_id: Option<InstallationId>,
    /// `owner/name` of every repository it holds, sorted.
    pub repos: Vec<String>,
    pub since: DateTime<Utc>,
    pub reason: String,
}

/// A repository with its entries and its newest events.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoDetail {
    pub repo: Repo,
    /// Newest first.
    pub events: Vec<RepoEvent>,
    /// Sorted by name.
    pub entries: Vec<Entry>,
}

crate::row! {
    /// One reconcile of a repository, or several in a row that said the same.
    #[derive(Debug, Clone, PartialEq)]
    pub struct RepoEvent {
        /// The time of the latest of them.
        pub at: DateTime<Utc>,
        pub kind: String,
        pub message: String,
        /// How many reconciles in a row recorded this kind and message.
        pub count: i64,
    }
}
