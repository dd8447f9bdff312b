//! Project files found by `**` patterns: the Git trees API
//! (`GET /repos/{owner}/{repo}/git/trees/{sha}?recursive=1`), asked only
//! when the repository's root tree differs from the one last walked, then
//! the matching blobs read 100 to a GraphQL query
//! (`fK: object(expression: "<commit>:<path>")`).
//!
//! The paths and the texts cannot come from different commits: `<commit>`
//! is the sha the observation is recorded with, and the root tree oid
//! comes from the same `... on Commit` of the same answer (the listing, the
//! batch read, or the read at a commit after a REST look-up of the head).
//! A commit never changes, so its `<commit>:<path>` is the walked tree's
//! blob even when the branch has moved on since; a stored walk is reused
//! only for the very same root tree oid. A head without its tree fails
//! the read rather than be recorded without what `**` finds.
//!
//! A tree GitHub truncates (over 100,000 entries or 7 MB) is walked again
//! folder by folder where the patterns can reach, each folder recursively,
//! within [`MAX_TREE_REQUESTS`]; past that the repository's files are
//! unreadable with a message naming why, never silently incomplete.

use std::collections::{BTreeMap, HashMap};

use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::blob_query::{blob_query, BlobAsk};
use super::client::Client;
use super::file_problems::SYMLINK_MESSAGE;
use super::file_query::{file_content, files_state, BlobFields, FileQuery};
use super::http::{join, CallError};
use super::walked_trees::{self, Walk, WalkedEntry};
use crate::controller::Failure;
use crate::project::patterns::{too_many_files, MAX_FILES_PER_REPO};
use crate::source::{FileContent, FileState, InstallationId, Observed, RepoId, RepoInfo};

/// Trees API requests one repository's walk may take when GitHub truncated
/// its tree.
pub const MAX_TREE_REQUESTS: usize = 100;

/// Trees API requests of one batch in flight at once.
const TREE_CONCURRENCY: usize = 8;

/// Blobs read per GraphQL query.
const BLOBS_PER_QUERY: usize = 100;

const JSON: &str = "application/vnd.github+json";

/// One observation waiting for its `**` files: the repository's root tree
/// oid (from the same query) beside it.
pub struct Pending {
    pub id: RepoId,
    pub tree: Option<String>,
    pub observed: Result<Observed, Failure>,
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

/// Where one repository's walk stands.
enum Found {
    Entries(Vec<WalkedEntry>),
    Unreadable(String),
}

/// Adds to each observation the files its `**` patterns find.
pub async fn complete(
    client: &Client,
    files: &FileQuery,
    installation: InstallationId,
    pending: &mut [Pending],
) {
    if !files.files().needs_tree() || pending.is_empty() {
        return;
    }
    let patterns = files.files().to_string();
    let ids: Vec<RepoId> = pending.iter().map(|p| p.id).collect();
    let known = walked_trees::load(&client.pool, &ids)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "could not read the walked trees; walking again");
            HashMap::new()
        });
    let mut walks = Vec::new();
    let mut found: HashMap<usize, Found> = HashMap::new();
    let mut to_walk = Vec::new();
    let mut treeless = Vec::new();
    for (index, item) in pending.iter().enumerate() {
        let (repo, tree) = match walkable(item) {
            Walkable::No => continue,
            Walkable::WithoutTree => {
                treeless.push(index);
                continue;
            }
            Walkable::Yes { repo, tree } => (repo, tree),
        };
        match known
            .get(&item.id)
            .filter(|w| w.tree_oid == tree && w.patterns == patterns)
        {
            Some(walk) => {
                found.insert(index, Found::Entries(walk.entries.clone()));
            }
            None => to_walk.push((
                index,
                repo.owner.clone(),
                repo.name.clone(),
                tree.to_owned(),
            )),
        }
    }
    for index in treeless {
        // Recorded without its walk, the commit would lose what `**` finds.
        pending[index].observed = Err(CallError::Unexpected {
            what: "the batch read".to_owned(),
            message: "no root tree for the commit, which `**` patterns walk".to_owned(),
        }
        .into_failure());
    }
    let walked: Vec<_> = stream::iter(to_walk)
        .map(|(index, owner, name, tree)| async move {
            let result = walk_tree(client, files, installation, (&owner, &name), &tree).await;
            (index, tree, result)
        })
        .buffer_unordered(TREE_CONCURRENCY)
        .collect()
        .await;
    for (index, tree, result) in walked {
        let item = &mut pending[index];
        match result {
            Ok(Found::Entries(entries)) => {
                walks.push((
                    item.id,
                    Walk {
                        patterns: patterns.clone(),
                        tree_oid: tree,
                        entries: entries.clone(),
                    },
                ));
                found.insert(index, Found::Entries(entries));
            }
            Ok(unreadable) => {
                found.insert(index, unreadable);
            }
            Err(error) => item.observed = Err(error.into_failure()),
        }
    }
    let texts = read_blobs(client, installation, pending, &found).await;
    for (index, result) in found {
        let item = &mut pending[index];
        let Ok(Observed::Present { file, .. }) = &mut item.observed else {
            continue;
        };
        match (result, texts.get(&index)) {
            (_, Some(Err(failure))) => item.observed = Err(failure.clone()),
            (Found::Unreadable(message), _) => {
                let sha = sha_of(file);
                *file = FileState::Unreadable { sha, message };
            }
            (Found::Entries(entries), blobs) => {
                let empty = HashMap::new();
                let blobs = match blobs {
                    Some(Ok(blobs)) => blobs,
                    _ => &empty,
                };
                *file = merged(std::mem::replace(file, absent()), &entries, blobs);
            }
        }
    }
    if let Err(error) = walked_trees::save(&client.pool, &walks).await {
        tracing::warn!(%error, "could not store the walked trees");
    }
}

/// Whether an observation has `**` files to find.
enum Walkable<'a> {
    /// Nothing to walk: a failure, a removed or empty repository.
    No,
    /// A head commit without the root tree its answer should carry.
    WithoutTree,
    Yes {
        repo: &'a RepoInfo,
        tree: &'a str,
    },
}

fn walkable(item: &Pending) -> Walkable<'_> {
    let Ok(Observed::Present { repo, file }) = &item.observed else {
        return Walkable::No;
    };
    // Only what [`merged`] adds to is walked: a push's partial read
    // (`Touched`) reads only its paths, and a repository already unreadable
    // as a whole stays so whatever the walk finds (its trees and blobs
    // would be requests spent for nothing).
    if !matches!(
        file,
        FileState::Files { .. } | FileState::Absent { sha: Some(_) }
    ) {
        return Walkable::No;
    }
    match &item.tree {
        Some(tree) => Walkable::Yes { repo, tree },
        None => Walkable::WithoutTree,
    }
}

fn absent() -> FileState {
    FileState::Absent { sha: None }
}

/// The commit an observation's file state was read at.
fn sha_of(file: &FileState) -> Option<String> {
    match file {
        FileState::Absent { sha } | FileState::Unreadable { sha, .. } => sha.clone(),
        FileState::Found { sha, .. }
        | FileState::Files { sha, .. }
        | FileState::Binary { sha, .. } => Some(sha.clone()),
        FileState::Touched(touched) => Some(touched.sha.clone()),
    }
}

/// `file` (what the fixed-prefix patterns found) with the walked entries
/// added, sorted by path, within the bound of files.
fn merged(
    file: FileState,
    entries: &[WalkedEntry],
    blobs: &HashMap<String, BlobFields>,
) -> FileState {
    let (sha, mut all) = match file {
        FileState::Files { sha, files } => (
            sha,
            files
                .into_iter()
                .map(|f| (f.path, f.content))
                .collect::<BTreeMap<_, _>>(),
        ),
        FileState::Absent { sha: Some(sha) } => (sha, BTreeMap::new()),
        // Already unreadable as a whole (more than the bound), or no head.
        other => return other,
    };
    for entry in entries {
        if all.contains_key(&entry.path) {
            continue;
        }
        let content = entry_content(entry, blobs.get(&entry.path));
        all.insert(entry.path.clone(), content);
    }
    files_state(sha, all)
}

fn entry_content(entry: &WalkedEntry, blob: Option<&BlobFields>) -> FileContent {
    let problem = |m: &str| FileContent::Unreadable(format!("{}: file: {m}", entry.path));
    match (entry.kind.as_str(), entry.mode.as_str()) {
        (_, "120000") => problem(SYMLINK_MESSAGE),
        ("tree", _) => problem("the path is a folder, not a file"),
        ("blob", _) => match blob {
            Some(blob) => file_content(&entry.path, blob),
            None => problem("GitHub did not return the file"),
        },
        _ => problem("the path is not a file"),
    }
}

/// The entries of `tree` (the root tree of `owner/name`) that match.
async fn walk_tree(
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

/// The blob of each walked entry not found otherwise, by pending index and
/// path; a failed query fails the repositories it asked about.
async fn read_blobs(
    client: &Client,
    installation: InstallationId,
    pending: &[Pending],
    found: &HashMap<usize, Found>,
) -> HashMap<usize, Result<HashMap<String, BlobFields>, Failure>> {
    let mut wanted: Vec<(usize, String, String, String, String)> = Vec::new();
    for (&index, result) in found {
        let (Found::Entries(entries), Ok(Observed::Present { repo, file })) =
            (result, &pending[index].observed)
        else {
            continue;
        };
        let Some(sha) = sha_of(file) else { continue };
        let known: Vec<&str> = match file {
            FileState::Files { files, .. } => files.iter().map(|f| f.path.as_str()).collect(),
            _ => Vec::new(),
        };
        for entry in entries {
            if entry.kind == "blob"
                && entry.mode != "120000"
                && !known.contains(&entry.path.as_str())
            {
                wanted.push((
                    index,
                    repo.owner.clone(),
                    repo.name.clone(),
                    sha.clone(),
                    entry.path.clone(),
                ));
            }
        }
    }
    let mut texts: HashMap<usize, Result<HashMap<String, BlobFields>, Failure>> = HashMap::new();
    for chunk in wanted.chunks(BLOBS_PER_QUERY) {
        let asks: Vec<BlobAsk<'_>> = chunk
            .iter()
            .map(|(_, owner, name, sha, path)| BlobAsk {
                owner,
                name,
                expression: format!("{sha}:{path}"),
            })
            .collect();
        let (query, aliases) = blob_query(&asks);
        let answer = client
            .graphql_partial::<HashMap<String, Value>>(installation, &query, serde_json::json!({}))
            .await;
        match answer {
            Ok((data, _errors)) => {
                for ((index, _, _, _, path), (repo_alias, file_alias)) in chunk.iter().zip(&aliases)
                {
                    let blob = data
                        .get(repo_alias)
                        .and_then(|r| r.get(file_alias))
                        .filter(|b| !b.is_null())
                        .and_then(|b| BlobFields::deserialize(b).ok());
                    let slot = texts.entry(*index).or_insert_with(|| Ok(HashMap::new()));
                    if let (Ok(map), Some(blob)) = (slot, blob) {
                        map.insert(path.clone(), blob);
                    }
                }
            }
            Err(error) => {
                let failure = error.into_failure();
                for (index, ..) in chunk {
                    texts.insert(*index, Err(failure.clone()));
                }
            }
        }
    }
    texts
}

#[cfg(test)]
mod tests;
