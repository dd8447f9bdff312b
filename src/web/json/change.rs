//! A change of the log as the feed, an entry's history and the
//! notifications show it (docs/contract.md#history-and-the-change-feed).

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::entry::EntryJson;
use crate::registry::budget;
use crate::registry::changes::Change;
use crate::source::RepoId;

/// One change of one entry. `before` and `after` are the entry as
/// `/api/v1/projects/{name}` showed it then (`null` when it did not exist).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChangeJson {
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// `created`, `changed` or `removed`.
    pub kind: &'static str,
    pub name: String,
    pub repo: String,
    pub repo_id: RepoId,
    pub sha: Option<String>,
    pub cause: String,
    pub before: Option<EntryJson>,
    pub after: Option<EntryJson>,
    /// A removal only: the names of the entries that depended on it at
    /// that moment, the first 1,000 by name (docs/contract.md#relations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependents: Option<Vec<String>>,
    /// A removal only: how many entries depended on it (more than
    /// `dependents` holds past 1,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependents_total: Option<usize>,
}

impl From<Change> for ChangeJson {
    fn from(change: Change) -> Self {
        Self {
            seq: change.seq,
            at: change.at,
            kind: change.kind.as_str(),
            name: change.name,
            repo: change.repo,
            repo_id: change.repo_id,
            sha: change.sha,
            cause: change.cause,
            before: change.before.map(EntryJson::from),
            after: change.after.map(EntryJson::from),
            dependents_total: change.dependents.as_ref().map(|d| d.total),
            dependents: change.dependents.map(|d| d.names),
        }
    }
}

/// A page of the feed: the changes after the asked `seq`, oldest first,
/// and the cursor to ask with next (the last `seq` here, or the asked one
/// when nothing is new).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FeedJson {
    pub items: Vec<ChangeJson>,
    pub next_cursor: i64,
}

/// `changes` as shown, cut to the exact byte bound of an answer (the log
/// bounds a page by its stored sizes, which are close, not exact). Returns
/// whether changes were dropped.
pub fn shown_changes(changes: Vec<Change>) -> (Vec<ChangeJson>, bool) {
    let mut items: Vec<ChangeJson> = changes.into_iter().map(ChangeJson::from).collect();
    let cut = budget::fit_json(&mut items);
    (items, cut)
}

/// A change as the body of its notification: what the feed shows of it.
pub fn change_body(change: &Change) -> Result<String, serde_json::Error> {
    serde_json::to_string(&ChangeJson::from(change.clone()))
}
