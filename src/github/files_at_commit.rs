//! The project files of one repository at one commit, for a read over
//! REST that has found the head: the fields of [`FileQuery`] asked inside
//! that commit, then what `**` patterns find in its tree.

use serde::Deserialize;
use serde_json::Value;

use super::client::Client;
use super::file_query::FileQuery;
use super::http::CallError;
use super::tree_walk::{complete, Pending};
use crate::source::{FileState, InstallationId, Observed, RepoId, RepoInfo};

/// The files of `owner/name` at commit `sha`, with [`FileQuery::at_commit`].
pub(super) async fn read_at(
    files: &FileQuery,
    client: &Client,
    installation: InstallationId,
    id: RepoId,
    (owner, name): (&str, &str),
    sha: String,
) -> Result<FileState, CallError> {
    let variables = serde_json::json!({ "owner": owner, "name": name, "oid": sha });
    let answer: AtCommit = client
        .graphql(installation, &files.at_commit(), variables)
        .await?;
    let what = format!("the files of {owner}/{name} at {sha}");
    let commit = answer
        .repository
        .and_then(|r| r.object)
        .ok_or_else(|| CallError::unexpected(&what, "GitHub does not know the commit"))?;
    let tree = commit
        .get("tree")
        .and_then(|t| t.get("oid"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let file = files.state(sha, &commit);
    if !files.files().needs_tree() {
        return Ok(file);
    }
    let repo = RepoInfo {
        owner: owner.to_owned(),
        name: name.to_owned(),
        installation_id: Some(installation),
        default_branch: String::new(),
        html_url: None,
    };
    let mut pending = [Pending {
        id,
        tree,
        observed: Ok(Observed::Present { repo, file }),
    }];
    complete(client, files, installation, &mut pending).await;
    let [done] = pending;
    match done.observed {
        Ok(Observed::Present { file, .. }) => Ok(file),
        Ok(Observed::Removed { .. }) => Err(CallError::unexpected(what, "removed")),
        Err(failure) => Err(CallError::unexpected(what, failure.to_string())),
    }
}

/// The answer to [`FileQuery::at_commit`].
#[derive(Debug, Deserialize)]
struct AtCommit {
    repository: Option<AtCommitRepository>,
}

#[derive(Debug, Deserialize)]
struct AtCommitRepository {
    object: Option<serde_json::Map<String, Value>>,
}
