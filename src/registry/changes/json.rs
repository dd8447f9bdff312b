//! The JSON shape of one change, as the feed, the history and the
//! notifications show it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::source::RepoId;

/// What happened to the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Changed,
    Removed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Changed => "changed",
            ChangeKind::Removed => "removed",
        }
    }

    /// The kind as stored; `None` for a value the schema does not allow.
    pub fn parse(kind: &str) -> Option<Self> {
        match kind {
            "created" => Some(ChangeKind::Created),
            "changed" => Some(ChangeKind::Changed),
            "removed" => Some(ChangeKind::Removed),
            _ => None,
        }
    }
}

/// One change of one entry. `before` and `after` are the entry as
/// `/api/v1/projects/{name}` showed it then (`null` when it did not exist).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeJson {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub kind: ChangeKind,
    pub name: String,
    /// `owner/name` of the repository at the time.
    pub repo: String,
    pub repo_id: RepoId,
    /// The commit that caused the change, when there is one.
    pub sha: Option<String>,
    pub cause: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}
