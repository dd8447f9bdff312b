//! The Git trees API (`GET /repos/{owner}/{repo}/git/trees/{sha}`): the
//! entries of a root tree that `**` patterns match, the tree walked again
//! folder by folder when GitHub truncated it.

use serde::Deserialize;

use crate::github::client::Client;
use crate::github::file_query::FileQuery;
use crate::github::http::{join, CallError};
use crate::github::walked_trees::WalkedEntry;
use crate::project::patterns::{too_many_files, MAX_FILES_PER_REPO};
use crate::source::InstallationId;

/// Trees API requests one repository's walk may take when GitHub truncated
/// its tree.
pub const MAX_TREE_REQUESTS: usize = 100;

const JSON: &str = "application/vnd.github+json";

/// Where one repository's walk stands.
pub(super) enum Found {
    Entries(Vec<WalkedEntry>),
    Unreadable(String),
}

/// The trees API's answer.
#[derive(Debug, Deserialize)]
struct TreeAnswer {
    #[serde(default)]
    tree: Vec<GitEntry>,
    #[serde(default)]
    truncated: bool,
}

#[derive(Debug, Deserialize)]
struct GitEntry {
    path: String,
    mode: String,
    #[serde(rename = "type")]
    kind: String,
    sha: String,
}

/// The entries of `tree` (the root tree of `owner/name`) that match.
pub(super) async fn walk_tree(
    client: &Client,
    files: &FileQuery,
    installation: InstallationId,
    (owner, name): (&str, &str),
    tree: &str,
) -> Result<Found, CallError> {
    let patterns = files.files();
    let mut matched = Vec::new();
    let mut requests = 0;
    // Folders to list (path, tree sha, recursively?).
    let mut folders = vec![(String::new(), tree.to_owned(), true)];
    while let Some((dir, sha, recursive)) = folders.pop() {
        requests += 1;
        if requests > MAX_TREE_REQUESTS {
            return Ok(Found::Unreadable(format!(
                "file: the repository's tree is too large to search for project files \
                 (GitHub truncated it, and more than {MAX_TREE_REQUESTS} folders would be listed one by one)"
            )));
        }
        let answer = list(client, installation, (owner, name), &sha, recursive).await?;
        if answer.truncated && recursive {
            // List this folder alone, then each sub-folder on its own.
            folders.push((dir, sha, false));
            continue;
        }
        if answer.truncated {
            return Ok(Found::Unreadable(format!(
                "file: the folder {:?} has too many entries for GitHub to list",
                if dir.is_empty() { "/" } else { dir.as_str() }
            )));
        }
        for entry in answer.tree {
            let path = if dir.is_empty() {
                entry.path
            } else {
                format!("{dir}/{}", entry.path)
            };
            if patterns.matches(&path) {
                matched.push(WalkedEntry {
                    path: path.clone(),
                    kind: entry.kind.clone(),
                    mode: entry.mode.clone(),
                });
                if matched.len() > MAX_FILES_PER_REPO {
                    return Ok(Found::Unreadable(format!("file: {}", too_many_files())));
                }
            }
            if !recursive && entry.kind == "tree" && patterns.may_hold(&path) {
                folders.push((path, entry.sha, true));
            }
        }
    }
    matched.sort_by(|a, b| a.path.cmp(&b.path));
    matched.dedup_by(|a, b| a.path == b.path);
    Ok(Found::Entries(matched))
}

/// One trees API request.
async fn list(
    client: &Client,
    installation: InstallationId,
    (owner, name): (&str, &str),
    sha: &str,
    recursive: bool,
) -> Result<TreeAnswer, CallError> {
    let mut url = join(&client.api_url, ["repos", owner, name, "git", "trees", sha])?;
    if recursive {
        url.query_pairs_mut().append_pair("recursive", "1");
    }
    let what = format!("GET /repos/{owner}/{name}/git/trees/{sha}");
    let reply = client.get(installation, &url, JSON, false).await?;
    if reply.status != 200 {
        return Err(CallError::Status {
            what,
            status: reply.status,
            message: reply.message(),
        });
    }
    serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(what, e))
}
