//! A project file GitHub's GraphQL calls binary though it is within the
//! size bound ([`FileState::Binary`]). GitHub takes a single NUL byte for
//! binary, and a NUL has a line and column: so before such an observation
//! is applied, the file is read once over REST at its commit and, when its
//! bytes are UTF-8 text (NULs are), applied as those bytes, invalid at the
//! NUL as a folder's file is. Not when the registry already judged that
//! blob: the listing of an unchanged repository still reads nothing.
//! The same holds for each of several project files
//! ([`FileContent::Binary`]), read at its path.

use futures_util::stream::{self, StreamExt};

use super::contents::contents_at;
use super::storage::GithubStorage;
use crate::controller::Failure;
use crate::source::{FileContent, FileState, InstallationId, Observed, PathFile, RepoId};

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
        self.read_binary_files(ids, states).await;
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

/// One of several project files to read: the observation's read, and
/// the file's path in it.
struct FileToRead {
    read: ToRead,
    path: String,
}

/// The files of an observation of several project files (all of them, or
/// those a push touched), and the commit they were read at.
fn files_of(state: &mut Result<Observed, Failure>) -> Option<(&str, &mut Vec<PathFile>)> {
    match state {
        Ok(Observed::Present {
            file: FileState::Files { sha, files },
            ..
        }) => Some((sha.as_str(), files)),
        Ok(Observed::Present {
            file: FileState::Touched(touched),
            ..
        }) => Some((touched.sha.as_str(), &mut touched.files)),
        _ => None,
    }
}

impl GithubStorage {
    /// [`GithubStorage::read_binaries`] for each of several project files:
    /// an unjudged [`FileContent::Binary`] is read over REST at its path
    /// and commit, unless the registry judged its blob at that path.
    async fn read_binary_files(&self, ids: &[RepoId], states: &mut [Result<Observed, Failure>]) {
        let mut asked = Vec::new();
        for (index, (state, id)) in states.iter_mut().zip(ids).enumerate() {
            let installation = match state {
                Ok(Observed::Present { repo, .. }) => repo.installation_id,
                _ => None,
            };
            let (owner, name) = match state {
                Ok(Observed::Present { repo, .. }) => (repo.owner.clone(), repo.name.clone()),
                _ => continue,
            };
            let (Some(installation), Some((sha, files))) = (installation, files_of(state)) else {
                continue;
            };
            for file in files.iter() {
                if let FileContent::Binary { blob, judged: None } = &file.content {
                    asked.push(FileToRead {
                        read: ToRead {
                            index,
                            id: *id,
                            installation,
                            owner: owner.clone(),
                            name: name.clone(),
                            sha: sha.to_owned(),
                            blob: blob.clone(),
                        },
                        path: file.path.clone(),
                    });
                }
            }
        }
        if asked.is_empty() {
            return;
        }
        let items: Vec<(RepoId, String, String)> = asked
            .iter()
            .map(|a| (a.read.id, a.path.clone(), a.read.blob.clone()))
            .collect();
        match self.client.registry.judged_files(&items).await {
            Ok(judged) => asked.retain(|a| !judged.contains(&(a.read.id, a.path.clone()))),
            Err(error) => {
                tracing::warn!(%error, "cannot tell which binary files were judged; reading them");
            }
        }
        let reads = stream::iter(asked)
            .map(|a| async move {
                let ToRead {
                    installation,
                    owner,
                    name,
                    sha,
                    ..
                } = &a.read;
                let repo = (owner.as_str(), name.as_str());
                let read =
                    contents_at(&self.client, *installation, repo, &a.path, sha.clone()).await;
                (a, read)
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        for (asked, read) in reads {
            let Some((_, files)) = files_of(&mut states[asked.read.index]) else {
                continue;
            };
            let Some(file) = files.iter_mut().find(|f| f.path == asked.path) else {
                continue;
            };
            match read {
                Ok(FileState::Found { bytes, .. }) if std::str::from_utf8(&bytes).is_ok() => {
                    file.content = FileContent::Bytes(bytes);
                }
                Ok(FileState::Found { .. }) => {
                    file.content = FileContent::Binary {
                        blob: asked.read.blob,
                        judged: Some(FileContent::binary_line(&asked.path)),
                    };
                }
                Ok(other) => {
                    tracing::warn!(repo = %asked.read.id, path = %asked.path, answer = ?other, "a file GitHub calls binary was not read as a file");
                }
                Err(error) => {
                    tracing::warn!(repo = %asked.read.id, path = %asked.path, %error, "could not read a file GitHub calls binary; applied as binary");
                }
            }
        }
    }
}
