//! A registry entry as the registry holds it: the fields of its project
//! file (docs/contract.md#the-project-file), what its owner was found to be,
//! and where it came from.
//!
//! Its serialized form is what the change log stores in `before` and
//! `after`, so it must keep reading rows written by earlier versions (a
//! field added since reads as its default; `path` as `project.yaml`, the
//! one file entries came from before several files were read). The API
//! shows an entry in this same form (`web::json::EntryJson`), which is why
//! a page of entries is measured by it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::project::preview::RegisteredEntry;
use crate::project::{Fields, ResolvedOwner};
use crate::source::RepoId;

/// One entry of the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
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
    #[serde(default = "first_path")]
    pub path: String,
    /// The commit that last changed the entry.
    pub source_sha: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Entry {
    /// The entry as a check's preview compares a file with it: a
    /// reconcile that read its repository's entries for the change log
    /// hands them to the preview instead of reading them again.
    pub(crate) fn registered(&self) -> RegisteredEntry {
        RegisteredEntry {
            name: self.name.clone(),
            path: self.path.clone(),
            fields: self.fields.clone(),
        }
    }
}

/// Where entries stored before they remembered their file came from
/// (migration 0030 gave them the same).
fn first_path() -> String {
    "project.yaml".to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::project::{Link, OwnerStatus};

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    fn entry() -> Entry {
        Entry {
            name: "api".into(),
            fields: Fields {
                owner: "team-a".into(),
                description: Some("The API".into()),
                lifecycle: Some("production".into()),
                tags: vec!["pay".into()],
                links: vec![Link {
                    title: "Runbook".into(),
                    url: "https://wiki/run".into(),
                }],
                labels: [("tier".to_owned(), "1".to_owned())].into(),
                depends_on: vec!["db".into()],
                system: Some("shop".into()),
            },
            resolved: ResolvedOwner {
                owner_status: OwnerStatus::Team,
                owner_team_id: Some(42),
                owner_slug: Some("team-a".into()),
            },
            repo: "acme/app".into(),
            repo_id: RepoId(7),
            path: "svc/project.yaml".into(),
            source_sha: "abc".into(),
            created_at: at(0),
            updated_at: at(60),
        }
    }

    /// The change log holds rows in this form: it must not move.
    #[test]
    fn the_stored_form_should_stay_what_the_change_log_holds() {
        let stored = serde_json::to_string(&entry()).unwrap_or_default();
        assert_eq!(
            stored,
            r#"{"name":"api","owner":"team-a","description":"The API","lifecycle":"production","tags":["pay"],"links":[{"title":"Runbook","url":"https://wiki/run"}],"labels":{"tier":"1"},"depends_on":["db"],"system":"shop","owner_status":"team","owner_team_id":42,"owner_slug":"team-a","repo":"acme/app","repo_id":7,"path":"svc/project.yaml","source_sha":"abc","created_at":"1970-01-01T00:00:00Z","updated_at":"1970-01-01T00:01:00Z"}"#
        );
        let back: Result<Entry, _> = serde_json::from_str(&stored);
        assert_eq!(back.ok(), Some(entry()));
    }

    /// A row written before entries had a path and a resolved owner.
    #[test]
    fn a_row_from_before_paths_and_owners_should_still_read() {
        let old = json!({
            "name": "api", "owner": "team-a", "description": null, "lifecycle": null,
            "tags": [], "links": [], "labels": {},
            "repo": "acme/app", "repo_id": 7, "source_sha": "abc",
            "created_at": "1970-01-01T00:00:00Z", "updated_at": "1970-01-01T00:01:00Z"
        });
        let read: Result<Entry, _> = serde_json::from_value(old);
        let read = read.ok();
        assert_eq!(read.as_ref().map(|e| e.path.as_str()), Some("project.yaml"));
        assert_eq!(
            read.as_ref().map(|e| e.resolved.clone()),
            Some(ResolvedOwner::default())
        );
        assert_eq!(read.map(|e| e.fields.owner), Some("team-a".to_owned()));
    }
}
