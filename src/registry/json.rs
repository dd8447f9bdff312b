//! The JSON shapes of docs/contract.md#http-routes, shared by the API and the dashboard.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Status;
use crate::project::{Fields, ResolvedOwner};
use crate::source::{InstallationId, RepoId};

/// One page of a list, and where the next one starts (`None` on the last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A repository as `/api/v1/repos` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepoJson {
    pub id: RepoId,
    pub full_name: String,
    pub status: Status,
    pub synced_sha: Option<String>,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    pub attempts: i32,
    /// Names of the entries it owns, sorted.
    pub projects: Vec<String>,
    /// Set while the deletion guard holds its removal (an active hold).
    pub hold: Option<HoldJson>,
}

/// A deletion-guard hold on a repository's removal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldJson {
    pub id: i64,
    pub since: DateTime<Utc>,
    pub reason: String,
}

/// An active hold, as `/api/v1/holds` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActiveHoldJson {
    pub id: i64,
    /// `None` for the local folder source.
    pub installation_id: Option<InstallationId>,
    /// `owner/name` of every repository it holds, sorted.
    pub repos: Vec<String>,
    pub since: DateTime<Utc>,
    pub reason: String,
}

/// A repository with its entries and recent events, as the detail route shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepoDetailJson {
    #[serde(flatten)]
    pub repo: RepoJson,
    /// Newest first.
    pub events: Vec<EventJson>,
    /// Sorted by name.
    pub entries: Vec<EntryJson>,
}

/// One reconcile of a repository, or several in a row that said the same.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct EventJson {
    /// The time of the latest of them.
    pub at: DateTime<Utc>,
    pub kind: String,
    pub message: String,
    /// How many reconciles in a row recorded this kind and message.
    pub count: i64,
}

/// A registry entry: the fields of docs/contract.md#the-project-file and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryJson {
    pub name: String,
    /// The fields the file declares (the table in `src/project/fields.rs`).
    #[serde(flatten)]
    pub fields: Fields,
    /// What its owner was found to be.
    #[serde(flatten)]
    pub resolved: ResolvedOwner,
    /// Full name of the repository that owns it.
    pub repo: String,
    pub repo_id: RepoId,
    /// The project file inside the repository that declares it.
    pub path: String,
    /// The commit that last changed the entry.
    pub source_sha: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A link of an entry, as stored.
pub type LinkJson = crate::project::Link;
