//! A project file GitHub's GraphQL calls binary though it is within the
//! size bound ([`FileState::Binary`]). GitHub takes a single NUL byte for
//! binary, and a NUL has a line and column: so before such an observation
//! is applied, the file is read once over REST at its commit and, when its
//! bytes are UTF-8 text (NULs are), applied as those bytes, invalid at the
//! NUL as a folder's file is. Not when the registry already judged that
//! blob: the listing of an unchanged repository still reads nothing.

use futures_util::stream::{self, StreamExt};

use super::contents::contents_at;
use super::storage::GithubStorage;
use crate::controller::Failure;
use crate::source::{FileState, InstallationId, Observed, RepoId};

/// At most this many of these reads at once.
const CONCURRENCY: usize = 4;

/// One observation to read: where it sits, and what to read.
struct ToRead {
    index: usize,
    id: RepoId,
    installation: InstallationId,
    owner: String,
    name: String,
    sha: String,
    blob: String,
}

impl GithubStorage {
    /// Replaces each unconfirmed [`FileState::Binary`] of `states` (of the
    /// repositories `ids`, in the same order) by what its bytes say, unless
    /// the registry judged its blob already. A read that fails leaves it as
    /// it was: it is applied as binary, and read again the next time.
    pub(super) async fn read_binaries(
        &self,
        ids: &[RepoId],
        states: &mut [Result<Observed, Failure>],
    ) {
        let mut asked: Vec<ToRead> = states
            .iter()
            .zip(ids)
            .enumerate()
            .filter_map(|(index, (state, id))| match state {
                Ok(Observed::Present {
                    repo,
                    file:
                        FileState::Binary {
                            sha,
                            blob,
                            confirmed: false,
                        },
                }) => Some(ToRead {
                    index,
                    id: *id,
                    installation: repo.installation_id?,
                    owner: repo.owner.clone(),
                    name: repo.name.clone(),
                    sha: sha.clone(),
                    blob: blob.clone(),
                }),
                _ => None,
            })
            .collect();
        if asked.is_empty() {
            return;
        }
        let blobs: Vec<(RepoId, String)> = asked.iter().map(|a| (a.id, a.blob.clone())).collect();
        match self.client.registry.judged_blobs(&blobs).await {
            Ok(judged) => asked.retain(|a| !judged.contains(&a.id)),
            Err(error) => {
                tracing::warn!(%error, "cannot tell which binary files were judged; reading them");
            }
        }
        let reads = stream::iter(asked)
            .map(|a| async move {
                let (repo, path) = (
                    (a.owner.as_str(), a.name.as_str()),
                    &self.client.project_file,
                );
                let read =
                    contents_at(&self.client, a.installation, repo, path, a.sha.clone()).await;
                (a, read)
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        for (asked, read) in reads {
            let Ok(Observed::Present { file, .. }) = &mut states[asked.index] else {
                continue;
            };
            match read {
                Ok(FileState::Found { sha, bytes }) if std::str::from_utf8(&bytes).is_ok() => {
                    *file = FileState::Found { sha, bytes };
                }
                Ok(FileState::Found { .. }) => {
                    if let FileState::Binary { confirmed, .. } = file {
                        *confirmed = true;
                    }
                }
                Ok(other) => {
                    tracing::warn!(repo = %asked.id, answer = ?other, "a file GitHub calls binary was not read as a file");
                }
                Err(error) => {
                    tracing::warn!(repo = %asked.id, %error, "could not read a file GitHub calls binary; applied as binary");
                }
            }
        }
    }
}
