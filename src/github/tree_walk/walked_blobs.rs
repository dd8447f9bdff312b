//! The blobs of walked entries that the fixed-prefix patterns did not
//! read, 100 to a GraphQL query (`fK: object(expression: "<commit>:<path>")`).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::git_trees::Found;
use super::Pending;
use crate::controller::Failure;
use crate::github::blob_query::{blob_query, BlobAsk};
use crate::github::client::Client;
use crate::github::file_query::BlobFields;
use crate::source::{FileState, InstallationId, Observed};

/// Blobs read per GraphQL query.
const BLOBS_PER_QUERY: usize = 100;

/// The blob of each walked entry not found otherwise, by pending index and
/// path; a failed query fails the repositories it asked about.
pub(super) async fn read_blobs(
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

/// The commit an observation's file state was read at.
pub(super) fn sha_of(file: &FileState) -> Option<String> {
    match file {
        FileState::Absent { sha } | FileState::Unreadable { sha, .. } => sha.clone(),
        FileState::Found { sha, .. }
        | FileState::Files { sha, .. }
        | FileState::Binary { sha, .. } => Some(sha.clone()),
        FileState::Touched(touched) => Some(touched.sha.clone()),
    }
}
