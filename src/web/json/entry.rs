//! A registry entry as the API shows it, on its own, in a repository's
//! detail and as a change's `before` and `after`: the one mapping of an
//! entry to JSON.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::project::{Fields, ResolvedOwner};
use crate::registry::Entry;
use crate::source::RepoId;

/// A registry entry as docs/contract.md#an-entry shows it: the name, the
/// fields of the table in `src/project/fields.rs` (what the file declares,
/// then what its owner was found to be) and where it came from ([`Entry`]).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct EntryJson {
    pub name: String,
    #[serde(flatten)]
    pub fields: Fields,
    #[serde(flatten)]
    pub resolved: ResolvedOwner,
    pub repo: String,
    pub repo_id: RepoId,
    pub path: String,
    pub source_sha: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Entry> for EntryJson {
    fn from(entry: Entry) -> Self {
        Self {
            name: entry.name,
            fields: entry.fields,
            resolved: entry.resolved,
            repo: entry.repo,
            repo_id: entry.repo_id,
            path: entry.path,
            source_sha: entry.source_sha,
            created_at: entry.created_at,
            updated_at: entry.updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry cuts pages of entries by the bytes of their stored
    /// form, and the change log stores that form: the API must show the
    /// same bytes.
    #[test]
    fn an_entry_should_show_as_it_is_stored() {
        let mut entry = crate::registry::testing::entry("api", "team-a");
        entry.fields.tags = vec!["pay".into()];
        let stored = serde_json::to_string(&entry).ok();
        let shown = serde_json::to_string(&EntryJson::from(entry)).ok();
        assert!(stored.is_some());
        assert_eq!(shown, stored);
    }
}
