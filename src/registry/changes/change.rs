//! One change of the log, as its reads return it: the feed, an entry's
//! history, the stream and the notifications all start from it.

use chrono::{DateTime, Utc};

use crate::registry::Entry;
use crate::source::RepoId;

/// What happened to the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    Changed,
    Removed,
}

impl ChangeKind {
    /// The kind as stored and shown.
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

/// One change of one entry. `before` and `after` are the entry as it was
/// then (`None` when it did not exist), `before` whole again for a change
/// (it is stored as the fields that moved).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
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
    pub before: Option<Entry>,
    pub after: Option<Entry>,
    /// For a removal: who depended on the entry at that moment.
    pub dependents: Option<RemovedDependents>,
}

/// Who depended on a removed entry when it was removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemovedDependents {
    /// The first of them by name, at most 1,000.
    pub names: Vec<String>,
    /// How many there were.
    pub total: usize,
}
