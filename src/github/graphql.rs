//! The GraphQL listing query and what its answer means.
//!
//! One query returns 100 repositories of an account *and* each one's project
//! file at the head of its default branch, so a full listing costs about one
//! request per 100 repositories instead of one REST call per repository.
//! The file is read through the head commit itself (`Commit.file`), so the
//! bytes and the sha they are reported with always belong together.
//!
//! Every query string the code sends is in [`QUERIES`]; a test validates each
//! against GitHub's published schema.

use serde::Deserialize;

pub use super::file_query::{too_large, MODE_SYMLINK, SYMLINK_MESSAGE};
use super::file_query::{with_fields, FileQuery};
use super::MAX_FILE_BYTES;
use crate::source::{FileState, InstallationId, Observed, RepoId, RepoInfo, BINARY_MESSAGE};

/// A project file (`$path`) inside a commit: one selection for every
/// query that reads the file by path, so each reads the same fields.
macro_rules! project_file {
    () => {
        "file(path: $path) {
  mode
  object {
    ... on Blob {
      oid
      byteSize
      isBinary
      isTruncated
      text
    }
  }
}
"
    };
}
pub(crate) use project_file;

/// What is read of a repository: its project file at the head commit
/// itself, so the bytes and the sha they are reported with belong
/// together. The listing and the batch read ([`super::read_query`]) ask
/// the same, so both observe a repository alike.
macro_rules! repository_fields {
    () => {
        concat!(
            "databaseId
name
owner {
  login
}
isArchived
isPrivate
url
defaultBranchRef {
  name
  target {
    oid
    ... on Commit {
",
            $crate::github::graphql::project_file!(),
            "    }
  }
}
"
        )
    };
}
pub(crate) use repository_fields;

/// GitHub's budget, asked beside every query's own fields, written once
/// for all of them: each answer's body shows what is left and what the
/// query cost, for whoever reads a logged answer. The source paces itself
/// by the answer's rate-limit headers, not by this.
macro_rules! rate_limit {
    () => {
        "  rateLimit {
    limit
    remaining
    resetAt
    cost
  }
"
    };
}
pub(crate) use rate_limit;

/// Repositories of one account (`$owner`), 100 per page, each with its
/// project file (`$path`) at the head of its default branch.
///
/// `repositoryOwner(login:)` rather than `viewer`: an installation token has
/// no viewer, and it only sees the repositories the installation was
/// granted, so this lists exactly those. Ordered by creation so that pages
/// stay stable while the listing walks them.
pub const LIST_REPOSITORIES: &str = concat!(
    "query ListRepositories($owner: String!, $after: String, $path: String!) {\n",
    rate_limit!(),
    r#"  repositoryOwner(login: $owner) {
    repositories(first: 100, after: $after, ownerAffiliations: [OWNER], orderBy: {field: CREATED_AT, direction: ASC}) {
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
"#,
    repository_fields!(),
    "      }
    }
  }
}"
);

/// A GraphQL answer: data, errors, or both.
#[derive(Debug, Deserialize)]
pub struct Answer<T> {
    pub data: Option<T>,
    #[serde(default)]
    pub errors: Vec<GraphqlError>,
}

#[derive(Debug, Deserialize)]
pub struct GraphqlError {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message: String,
    /// Where in the answer it happened (`["nodes", 3]`), when it says.
    #[serde(default)]
    pub path: Vec<serde_json::Value>,
}

impl GraphqlError {
    pub fn is_rate_limit(&self) -> bool {
        self.kind.as_deref() == Some("RATE_LIMITED")
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListData {
    pub repository_owner: Option<Owner>,
}

#[derive(Debug, Deserialize)]
pub struct Owner {
    pub repositories: Connection,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    pub page_info: PageInfo,
    #[serde(default)]
    pub nodes: Vec<Option<RepoNode>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub has_next_page: bool,
    pub end_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoNode {
    /// The GraphQL node id (asked for by the batch read only).
    #[serde(default)]
    pub id: Option<String>,
    pub database_id: Option<i64>,
    pub name: String,
    pub owner: Login,
    pub is_archived: bool,
    /// Whether it is private (a public repository's check names only what
    /// public repositories hold); absent from an answer that did not ask.
    #[serde(default)]
    pub is_private: Option<bool>,
    pub url: Option<String>,
    pub default_branch_ref: Option<BranchRef>,
}

#[derive(Debug, Deserialize)]
pub struct Login {
    pub login: String,
}

#[derive(Debug, Deserialize)]
pub struct BranchRef {
    pub name: String,
    pub target: Option<Target>,
}

#[derive(Debug, Deserialize)]
pub struct Target {
    pub oid: String,
    #[serde(default)]
    pub file: Option<TreeEntry>,
    /// What the patterns' query asked inside the commit
    /// ([`super::file_query`]).
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct TreeEntry {
    /// Git's mode of the entry (a symbolic link is `0o120000`).
    #[serde(default)]
    pub mode: Option<u64>,
    pub object: Option<Blob>,
}

/// A blob; every field is absent when the path names a tree or a submodule.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    /// Git's blob id (asked by the one-path queries only).
    #[serde(default)]
    pub oid: Option<String>,
    pub byte_size: Option<u64>,
    pub is_binary: Option<bool>,
    pub is_truncated: Option<bool>,
    pub text: Option<String>,
}

impl RepoNode {
    /// The head commit's root tree oid, when the query asked it (patterns
    /// with `**` walk the tree only when it changed).
    pub fn tree_oid(&self) -> Option<String> {
        let target = self.default_branch_ref.as_ref()?.target.as_ref()?;
        let oid = target.fields.get("tree")?.get("oid")?.as_str()?;
        Some(oid.to_owned())
    }

    /// What the listing observed about this repository, as the storage
    /// would report it, its files read by `files` when the patterns are
    /// more than one path; `None` without a database id (cannot be keyed).
    pub fn observe(
        self,
        installation: InstallationId,
        files: Option<&FileQuery>,
    ) -> Option<(RepoId, Observed)> {
        let id = RepoId(self.database_id?);
        let branch = self.default_branch_ref;
        let repo = RepoInfo {
            owner: self.owner.login,
            name: self.name,
            installation_id: Some(installation),
            default_branch: branch.as_ref().map(|b| b.name.clone()).unwrap_or_default(),
            html_url: self.url,
        };
        if self.is_archived {
            return Some((
                id,
                Observed::Removed {
                    repo: Some(repo),
                    reason: "archived".into(),
                },
            ));
        }
        // No default branch: an empty repository, which has no file.
        let file = match branch.and_then(|b| b.target) {
            None => FileState::Absent { sha: None },
            Some(target) => match (files, target.file) {
                (Some(query), _) => query.state(target.oid, &target.fields),
                (
                    None,
                    Some(TreeEntry {
                        mode: Some(MODE_SYMLINK),
                        ..
                    }),
                ) => FileState::Unreadable {
                    sha: Some(target.oid),
                    message: SYMLINK_MESSAGE.into(),
                },
                (None, file) => file_state(target.oid, file.and_then(|f| f.object)),
            },
        };
        Some((id, Observed::Present { repo, file }))
    }
}

fn file_state(sha: String, blob: Option<Blob>) -> FileState {
    let Some(blob) = blob else {
        return FileState::Absent { sha: Some(sha) };
    };
    let size = blob.byte_size.unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return FileState::Unreadable {
            sha: Some(sha),
            message: too_large(size),
        };
    }
    if blob.is_binary == Some(true) {
        return match blob.oid {
            Some(blob) => FileState::Binary {
                sha,
                blob,
                confirmed: false,
            },
            None => FileState::Unreadable {
                sha: Some(sha),
                message: BINARY_MESSAGE.into(),
            },
        };
    }
    match (blob.text, blob.is_truncated) {
        (Some(text), Some(false) | None) => FileState::Found {
            sha,
            bytes: text.into_bytes(),
        },
        // A tree or submodule at the path has none of the blob's fields.
        (None, None) if blob.byte_size.is_none() => FileState::Unreadable {
            sha: Some(sha),
            message: "the path is not a file".into(),
        },
        _ => FileState::Unreadable {
            sha: Some(sha),
            message: "GitHub did not return the file's text".into(),
        },
    }
}

/// [`LIST_REPOSITORIES`] asking the fields of `files` instead of one
/// path, with `$first` repositories a page (fewer after GitHub refused a
/// page for its size).
pub fn list_query(files: &FileQuery) -> String {
    with_fields(LIST_REPOSITORIES, &files.commit_fields())
        .replace("$after: String)", "$after: String, $first: Int!)")
        .replace("repositories(first: 100,", "repositories(first: $first,")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: serde_json::Value) -> RepoNode {
        serde_json::from_value(json).unwrap()
    }

    fn repo(archived: bool, branch: serde_json::Value) -> RepoNode {
        node(serde_json::json!({
            "databaseId": 7, "name": "checkout", "owner": {"login": "acme"},
            "isArchived": archived, "url": "https://github.com/acme/checkout",
            "defaultBranchRef": branch,
        }))
    }

    fn with_blob(blob: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"name": "main", "target": {"oid": "abc", "file": {"object": blob}}})
    }

    #[test]
    fn a_repository_with_a_file_should_be_found_at_the_head() {
        let (id, observed) = repo(
            false,
            with_blob(serde_json::json!({
                "byteSize": 5, "isBinary": false, "isTruncated": false, "text": "name:"
            })),
        )
        .observe(InstallationId(3), None)
        .unwrap();
        assert_eq!(id, RepoId(7));
        let Observed::Present { repo, file } = observed else {
            panic!("not present")
        };
        assert_eq!(repo.installation_id, Some(InstallationId(3)));
        assert_eq!(repo.default_branch, "main");
        assert_eq!(
            file,
            FileState::Found {
                sha: "abc".into(),
                bytes: b"name:".to_vec()
            }
        );
    }

    #[test]
    fn an_archived_repository_should_be_removed_with_its_info() {
        let (_, observed) = repo(true, serde_json::Value::Null)
            .observe(InstallationId(3), None)
            .unwrap();
        assert!(
            matches!(observed, Observed::Removed { repo: Some(_), ref reason } if reason == "archived")
        );
    }

    #[test]
    fn an_empty_repository_or_a_missing_file_should_be_absent() {
        let (_, empty) = repo(false, serde_json::Value::Null)
            .observe(InstallationId(3), None)
            .unwrap();
        assert!(matches!(
            empty,
            Observed::Present {
                file: FileState::Absent { sha: None },
                ..
            }
        ));
        let no_file = serde_json::json!({"name": "main", "target": {"oid": "abc", "file": null}});
        let (_, missing) = repo(false, no_file)
            .observe(InstallationId(3), None)
            .unwrap();
        assert!(matches!(
            missing,
            Observed::Present {
                file: FileState::Absent { sha: Some(ref head) },
                ..
            } if head == "abc"
        ));
    }

    #[test]
    fn a_large_or_binary_file_should_be_unreadable() {
        let large = with_blob(serde_json::json!({
            "byteSize": 300_000, "isBinary": false, "isTruncated": true, "text": "x"
        }));
        let (_, observed) = repo(false, large).observe(InstallationId(3), None).unwrap();
        let Observed::Present {
            file: FileState::Unreadable { message, .. },
            ..
        } = observed
        else {
            panic!("not unreadable")
        };
        assert!(message.contains("300000 bytes"), "{message}");

        let binary = with_blob(serde_json::json!({
            "byteSize": 10, "isBinary": true, "isTruncated": false, "text": null
        }));
        let (_, observed) = repo(false, binary)
            .observe(InstallationId(3), None)
            .unwrap();
        assert!(matches!(
            observed,
            Observed::Present {
                file: FileState::Unreadable { .. },
                ..
            }
        ));

        // With its blob id, it is marked for a read of its bytes.
        let binary = with_blob(serde_json::json!({
            "oid": "b10b", "byteSize": 10, "isBinary": true, "isTruncated": false, "text": null
        }));
        let (_, observed) = repo(false, binary)
            .observe(InstallationId(3), None)
            .unwrap();
        assert!(matches!(
            observed,
            Observed::Present {
                file: FileState::Binary { ref blob, confirmed: false, .. },
                ..
            } if blob == "b10b"
        ));
    }

    #[test]
    fn a_directory_at_the_path_should_be_unreadable() {
        let (_, observed) = repo(false, with_blob(serde_json::json!({})))
            .observe(InstallationId(3), None)
            .unwrap();
        let Observed::Present {
            file: FileState::Unreadable { message, .. },
            ..
        } = observed
        else {
            panic!("not unreadable")
        };
        assert_eq!(message, "the path is not a file");
    }
}
