//! Reads one local repository's project file from disk.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::controller::{Failure, Storage};
use crate::project::MAX_FILE_BYTES;
use crate::source::{FileState, Observed, RepoId, RepoInfo};

use super::{repo_id, DirSource, LOCAL_OWNER};

/// Storage of the local source: the folder, then its project file.
#[derive(Debug, Clone)]
pub struct DirStorage {
    pub source: DirSource,
}

impl DirStorage {
    fn folder_for(&self, id: RepoId) -> Result<Option<String>, Failure> {
        let folders = self.source.folders().map_err(|e| {
            Failure::new(format!("cannot list {}: {e}", self.source.root.display()))
        })?;
        Ok(folders.into_iter().find(|f| repo_id(f) == id))
    }

    fn read_file(&self, folder: &str) -> Result<FileState, Failure> {
        let path = self
            .source
            .root
            .join(folder)
            .join(&self.source.project_file);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileState::Absent),
            Err(e) => return Err(Failure::new(format!("cannot read {}: {e}", path.display()))),
        };
        // Read at most one byte past the limit: enough to know it is too large.
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
        let sha = content_sha(&bytes);
        if bytes.len() > MAX_FILE_BYTES {
            return Ok(FileState::Unreadable {
                sha: None,
                message: format!(
                    "{}: file: larger than the limit of {} KiB",
                    self.source.project_file,
                    MAX_FILE_BYTES / 1024
                ),
            });
        }
        Ok(FileState::Found { sha, bytes })
    }
}

/// A stand-in for a commit sha: 40 hex digits of the content's SHA-256.
fn content_sha(bytes: &[u8]) -> String {
    let mut hex = hex::encode(Sha256::digest(bytes));
    hex.truncate(40);
    hex
}

impl Storage for DirStorage {
    type Key = RepoId;
    type State = Observed;

    async fn get(&self, key: &RepoId, _hint: Option<&[u8]>) -> Result<Observed, Failure> {
        let this = self.clone();
        let key = *key;
        tokio::task::spawn_blocking(move || {
            let Some(folder) = this.folder_for(key)? else {
                return Ok(Observed::Removed {
                    repo: None,
                    reason: "the folder no longer exists".into(),
                });
            };
            let file = this.read_file(&folder)?;
            let repo = RepoInfo {
                owner: LOCAL_OWNER.to_owned(),
                name: folder,
                installation_id: None,
                default_branch: "main".to_owned(),
                html_url: None,
            };
            Ok(Observed::Present { repo, file })
        })
        .await
        .map_err(|e| Failure::new(format!("reading the folder failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(dir: &std::path::Path) -> DirStorage {
        DirStorage {
            source: DirSource::new(dir, "project.yaml"),
        }
    }

    #[tokio::test]
    async fn get_should_tell_present_absent_and_removed_apart() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("a")).expect("mkdir");
        std::fs::create_dir(dir.path().join("b")).expect("mkdir");
        std::fs::write(dir.path().join("a/project.yaml"), "name: a\nowner: t\n").expect("write");
        let s = storage(dir.path());

        match s.get(&repo_id("a"), None).await {
            Ok(Observed::Present {
                repo,
                file: FileState::Found { bytes, sha },
            }) => {
                assert_eq!(repo.full_name(), "local/a");
                assert_eq!(bytes, b"name: a\nowner: t\n");
                assert_eq!(sha.len(), 40);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            s.get(&repo_id("b"), None).await,
            Ok(Observed::Present {
                file: FileState::Absent,
                ..
            })
        ));
        assert!(matches!(
            s.get(&repo_id("gone"), None).await,
            Ok(Observed::Removed { repo: None, .. })
        ));
    }

    #[tokio::test]
    async fn get_should_refuse_a_file_over_the_limit_without_reading_it_all() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("big")).expect("mkdir");
        std::fs::write(
            dir.path().join("big/project.yaml"),
            vec![b'#'; MAX_FILE_BYTES + 10],
        )
        .expect("write");
        match storage(dir.path()).get(&repo_id("big"), None).await {
            Ok(Observed::Present {
                file: FileState::Unreadable { message, .. },
                ..
            }) => {
                assert_eq!(
                    message,
                    "project.yaml: file: larger than the limit of 256 KiB"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
