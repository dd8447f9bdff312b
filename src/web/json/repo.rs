//! A repository as the API shows it: in a list, in its detail with its
//! events, entries and checks, and the holds on removals.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::entry::EntryJson;
use crate::registry::check_records::check_runs::RecentCheck;
use crate::registry::{ActiveHold, Hold, Repo, RepoDetail, RepoEvent, Status};
use crate::source::{InstallationId, RepoId};

/// A repository as `/api/v1/repos` shows it (docs/contract.md#a-repository):
/// what [`Repo`] holds, `hold` set while the deletion guard holds its removal.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RepoJson {
    pub id: RepoId,
    pub full_name: String,
    pub status: Status,
    pub synced_sha: Option<String>,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    pub attempts: i32,
    pub projects: Vec<String>,
    /// Entries whose owner is flagged or that depend on no project
    /// (docs/contract.md#a-repository).
    pub warnings: i64,
    pub hold: Option<HoldJson>,
}

impl From<Repo> for RepoJson {
    fn from(repo: Repo) -> Self {
        Self {
            id: repo.id,
            full_name: repo.full_name,
            status: repo.status,
            synced_sha: repo.synced_sha,
            last_synced_at: repo.last_synced_at,
            error: repo.error,
            attempts: repo.attempts,
            projects: repo.projects,
            warnings: repo.warnings,
            hold: repo.hold.map(HoldJson::from),
        }
    }
}

/// A deletion-guard hold on a repository's removal.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct HoldJson {
    pub id: i64,
    pub since: DateTime<Utc>,
    pub reason: String,
}

impl From<Hold> for HoldJson {
    fn from(hold: Hold) -> Self {
        Self {
            id: hold.id,
            since: hold.since,
            reason: hold.reason,
        }
    }
}

/// An active hold, as `/api/v1/holds` lists it (docs/contract.md#a-hold):
/// `installation_id` is `null` for the local folder source.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ActiveHoldJson {
    pub id: i64,
    pub installation_id: Option<InstallationId>,
    pub repos: Vec<String>,
    pub since: DateTime<Utc>,
    pub reason: String,
}

impl From<ActiveHold> for ActiveHoldJson {
    fn from(hold: ActiveHold) -> Self {
        Self {
            id: hold.id,
            installation_id: hold.installation_id,
            repos: hold.repos,
            since: hold.since,
            reason: hold.reason,
        }
    }
}

/// A repository with its entries and recent events, as the detail route shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RepoDetailJson {
    #[serde(flatten)]
    pub repo: RepoJson,
    pub events: Vec<EventJson>,
    pub entries: Vec<EntryJson>,
}

impl From<RepoDetail> for RepoDetailJson {
    fn from(detail: RepoDetail) -> Self {
        Self {
            repo: detail.repo.into(),
            events: detail.events.into_iter().map(EventJson::from).collect(),
            entries: detail.entries.into_iter().map(EntryJson::from).collect(),
        }
    }
}

/// An event of a repository's detail ([`RepoEvent`]).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EventJson {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub message: String,
    pub count: i64,
}

impl From<RepoEvent> for EventJson {
    fn from(event: RepoEvent) -> Self {
        Self {
            at: event.at,
            kind: event.kind,
            message: event.message,
            count: event.count,
        }
    }
}

/// A check of a repository's detail ([`RecentCheck`] says what each
/// field means).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CheckJson {
    pub sha: String,
    pub pull_request: Option<i32>,
    pub conclusion: Option<String>,
    pub decided: String,
    pub title: String,
    pub at: DateTime<Utc>,
    pub posted: bool,
    pub post_error: Option<String>,
}

impl From<RecentCheck> for CheckJson {
    fn from(check: RecentCheck) -> Self {
        Self {
            sha: check.sha,
            pull_request: check.pull_request,
            conclusion: check.conclusion,
            decided: check.decided,
            title: check.title,
            at: check.at,
            posted: check.posted,
            post_error: check.post_error,
        }
    }
}
