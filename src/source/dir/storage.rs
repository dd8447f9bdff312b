//! Reads one local repository's project file from disk.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::controller::{Failure, Storage};
use crate::project::MAX_FILE_BYTES;
use crate::source::{FileContent, FileState, Observed, PathFile, RepoId, RepoInfo};

use super::open::{open_project_file, Opened};
use super::walk::{matching_paths, Walked};
use super::{repo_id, DirError, DirSource, LOCAL_OWNER};

/// Why a project file that is a link, a FIFO, a device or a folder is
/// refused (docs/contract.md#bounds); the repository turns `invalid` and keeps its entries.
pub const NOT_REGULAR: &str = "not a regular file inside the source folder";

/// Storage of the local source: the folder, then its project file.
#[derive(Debug, Clone)]
pub struct DirStorage {
    pub source: DirSource,
}

impl DirStorage {
    fn folder_for(&self, id: RepoId) -> Result<Option<String>, Failure> {
        let folders = self.source.folders().map_err(|source| {
            Failure::new(DirError::List {
                path: self.source.root.clone(),
                source,
            })
        })?;
        Ok(folders.into_iter().find(|f| repo_id(f) == id))
    }

    /// The file at `path` in `folder`; `None` when the folder itself is gone.
    fn read_path(&self, folder: &str, path: &str) -> Result<Option<FileState>, Failure> {
        let cannot_read = |source: std::io::Error| {
            let path = self.source.root.join(folder).join(path);
            Failure::new(DirError::Read { path, source })
        };
        let file = match open_project_file(&self.source.root, folder, path) {
            Ok(Opened::File(file)) => file,
            Ok(Opened::Absent) => return Ok(Some(FileState::Absent { sha: None })),
            Ok(Opened::FolderGone) => return Ok(None),
            Ok(Opened::NotRegular) => {
                return Ok(Some(FileState::Unreadable {
                    sha: None,
                    message: format!("{path}: file: {NOT_REGULAR}"),
                }))
            }
            Err(e) => return Err(cannot_read(e)),
        };
        // Read at most one byte past the limit: enough to know it is too large.
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot_read)?;
        let sha = content_sha(&bytes);
        if bytes.len() > MAX_FILE_BYTES {
            return Ok(Some(FileState::Unreadable {
                sha: None,
                message: format!(
                    "{path}: file: larger than the limit of {} KiB",
                    MAX_FILE_BYTES / 1024
                ),
            }));
        }
        Ok(Some(FileState::Found { sha, bytes }))
    }

    /// The project files of `folder`, found by the patterns; `None` when
    /// the folder itself is gone.
    fn read_files(&self, folder: &str) -> Result<Option<FileState>, Failure> {
        let files = &self.source.files;
        if let Some(path) = files.single_path() {
            return self.read_path(folder, path);
        }
        let walked = matching_paths(&self.source.root, folder, files).map_err(|source| {
            let path = self.source.root.join(folder);
            Failure::new(DirError::Search { path, source })
        })?;
        let paths = match walked {
            Walked::FolderGone => return Ok(None),
            Walked::Refused(message) => {
                return Ok(Some(FileState::Unreadable { sha: None, message }))
            }
            Walked::Paths(paths) => paths,
        };
        let mut found = Vec::new();
        let mut digest = Sha256::new();
        for path in paths {
            let content = match self.read_path(folder, &path)? {
                None => return Ok(None),
                // Removed since the walk: as if the walk had not seen it.
                Some(FileState::Absent { .. }) => continue,
                Some(FileState::Found { bytes, .. }) => FileContent::Bytes(bytes),
                Some(FileState::Unreadable { message, .. }) => FileContent::Unreadable(message),
                Some(
                    FileState::Files { .. } | FileState::Touched(_) | FileState::Binary { .. },
                ) => continue,
            };
            digest.update(path.as_bytes());
            digest.update([0]);
            match &content {
                FileContent::Bytes(bytes) => digest.update(bytes),
                FileContent::Unreadable(message) => digest.update(message.as_bytes()),
                FileContent::Binary { blob, .. } => digest.update(blob.as_bytes()),
            }
            digest.update([0]);
            found.push(PathFile { path, content });
        }
        if found.is_empty() {
            return Ok(Some(FileState::Absent { sha: None }));
        }
        let mut sha = hex::encode(digest.finalize());
        sha.truncate(40);
        Ok(Some(FileState::Files { sha, files: found }))
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
            let gone = || Observed::Removed {
                repo: None,
                reason: "the folder no longer exists".into(),
            };
            let Some(folder) = this.folder_for(key)? else {
                return Ok(gone());
            };
            let Some(file) = this.read_files(&folder)? else {
                return Ok(gone());
            };
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
        .map_err(|e| Failure::new(DirError::from(e)))?
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
                file: FileState::Absent { .. },
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

    fn not_regular(observed: Result<Observed, Failure>) -> (String, String) {
        match observed {
            Ok(Observed::Present {
                repo,
                file: FileState::Unreadable { sha: None, message },
            }) => (repo.full_name(), message),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn get_should_refuse_a_link_leaving_the_folder_without_reading_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let org = dir.path().join("org");
        std::fs::create_dir_all(org.join("svc")).expect("mkdir");
        std::fs::write(dir.path().join("secret.yaml"), "name: s3cr3t\nowner: x\n").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.yaml"), org.join("svc/project.yaml"))
            .expect("symlink");
        let (repo, message) = not_regular(storage(&org).get(&repo_id("svc"), None).await);
        assert_eq!(repo, "local/svc");
        assert_eq!(
            message,
            "project.yaml: file: not a regular file inside the source folder"
        );
    }

    #[tokio::test]
    async fn get_should_keep_a_folder_replaced_by_a_link_as_a_repository_it_cannot_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (org, outside) = (dir.path().join("org"), dir.path().join("outside"));
        std::fs::create_dir_all(&org).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("project.yaml"), "name: s3cr3t\nowner: x\n").expect("write");
        std::os::unix::fs::symlink(&outside, org.join("svc")).expect("symlink");
        let (repo, message) = not_regular(storage(&org).get(&repo_id("svc"), None).await);
        assert_eq!(repo, "local/svc");
        assert_eq!(message, format!("project.yaml: file: {NOT_REGULAR}"));
    }

    #[tokio::test]
    async fn get_should_refuse_a_folder_named_like_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("svc/project.yaml")).expect("mkdir");
        let (_, message) = not_regular(storage(dir.path()).get(&repo_id("svc"), None).await);
        assert_eq!(message, format!("project.yaml: file: {NOT_REGULAR}"));
    }
}
