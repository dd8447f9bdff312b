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

use super::client::Client;
use super::file_query::{file_content, files_state, BlobFields, FileQuery, SYMLINK_MESSAGE};
use super::http::CallError;
use super::walked_trees::{self, Walk, WalkedEntry};
use crate::controller::Failure;
use crate::source::{FileContent, FileState, InstallationId, Observed, RepoId, RepoInfo};
pub use git_trees::MAX_TREE_REQUESTS;
use git_trees::{walk_tree, Found};
use walked_blobs::{read_blobs, sha_of};

mod git_trees;
mod walked_blobs;

/// Trees API requests of one batch in flight at once.
const TREE_CONCURRENCY: usize = 8;

/// One observation waiting for its `**` files: the repository's root tree
/// oid (from the same query) beside it.
pub struct Pending {
    pub id: RepoId,
    pub tree: Option<String>,
    pub observed: Result<Observed, Failure>,
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

#[cfg(test)]
mod tests;
