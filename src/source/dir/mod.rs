//! The local `dir:` source: each sub-folder of a folder stands for a
//! repository, so Roster runs end to end without GitHub.
//!
//! A repository's owner is `local`, its name the folder's name (docs/contract.md#repository-statuses), its
//! id a stable hash of that name, and its "commit" a digest of the file.

mod lister;
mod open;
mod storage;
pub mod teams;
pub mod teams_file;
mod walk;
mod watcher;

pub use lister::DirLister;
pub use storage::{DirStorage, NOT_REGULAR};
pub use walk::{matching_paths, Walked};
pub use watcher::watch;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::RepoId;
use crate::project::ProjectFiles;

/// Why the source folder could not be read; the key is tried again.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("cannot list {}: {source}", .path.display())]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot search {}: {source}", .path.display())]
    Search {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The blocking read was cancelled or panicked.
    #[error("reading the folder failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The owner every local repository has.
pub const LOCAL_OWNER: &str = "local";

/// Ids of local repositories start here, far above GitHub's, so the two
/// can never collide in one registry.
const ID_FLOOR: u64 = 1 << 50;

/// Ids of local repositories stay below this: 2^53, the largest range of
/// whole numbers a JavaScript number (a JSON reader's double) holds exactly.
const ID_CEILING: u64 = 1 << 53;

/// A stable id for a folder name: the same name gives the same id on every
/// machine and every start, between 2^50 and 2^53 (migration 0023 moved
/// the older, wider ids into this range).
pub fn repo_id(folder: &str) -> RepoId {
    let digest = Sha256::digest(format!("{LOCAL_OWNER}/{folder}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let n = u64::from_be_bytes(first) % (ID_CEILING - ID_FLOOR);
    RepoId((ID_FLOOR + n) as i64)
}

/// Whether an id is a local folder's: GitHub's ids are far below
/// [`ID_FLOOR`].
pub fn is_local(id: RepoId) -> bool {
    u64::try_from(id.0).is_ok_and(|n| n >= ID_FLOOR)
}

/// The folder a local source reads, and where project files lie inside
/// each sub-folder.
#[derive(Debug, Clone)]
pub struct DirSource {
    pub root: PathBuf,
    pub files: ProjectFiles,
}

impl DirSource {
    /// One project file at `project_file` in each sub-folder.
    pub fn new(root: impl Into<PathBuf>, project_file: &str) -> Self {
        Self::with_files(root, ProjectFiles::path(project_file))
    }

    /// Every file matching `files` in each sub-folder.
    pub fn with_files(root: impl Into<PathBuf>, files: ProjectFiles) -> Self {
        Self {
            root: root.into(),
            files,
        }
    }

    /// The sub-folders standing for repositories, sorted by name. Hidden
    /// folders and names that are not UTF-8 are skipped. A symbolic link to
    /// a folder is listed too, so that a repository folder replaced by a
    /// link turns `invalid` (its file is never read through the link) and
    /// keeps its entries, instead of looking deleted.
    pub fn folders(&self) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            // `stat` of the link's target only tells whether it is a folder;
            // it never opens it, so a FIFO or device there cannot block.
            let listed = kind.is_dir()
                || (kind.is_symlink() && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()));
            if !listed {
                continue;
            }
            if let Some(name) = entry.file_name().to_str() {
                if !name.starts_with('.') {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    /// The top-level folder a changed path belongs to, if any.
    fn folder_of(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let first = rel.components().next()?;
        let name = first.as_os_str().to_str()?;
        (!name.starts_with('.')).then(|| name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_id_should_be_stable_and_above_github_ids() {
        assert_eq!(repo_id("checkout"), repo_id("checkout"));
        assert_ne!(repo_id("checkout"), repo_id("billing"));
        assert!(repo_id("checkout").0 >= ID_FLOOR as i64);
    }

    #[test]
    fn folder_of_should_name_the_top_level_folder() {
        let s = DirSource::new("/org", "project.yaml");
        assert_eq!(
            s.folder_of(Path::new("/org/checkout/project.yaml")),
            Some("checkout".into())
        );
        assert_eq!(
            s.folder_of(Path::new("/org/checkout")),
            Some("checkout".into())
        );
        assert_eq!(s.folder_of(Path::new("/org/.git/x")), None);
        assert_eq!(s.folder_of(Path::new("/elsewhere/x")), None);
    }

    #[test]
    fn folders_should_list_links_to_folders_and_skip_other_entries() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (org, outside) = (dir.path().join("org"), dir.path().join("outside"));
        std::fs::create_dir_all(org.join("real")).expect("mkdir");
        std::fs::create_dir_all(org.join(".hidden")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(org.join("file.txt"), "x").expect("write");
        std::os::unix::fs::symlink(&outside, org.join("away")).expect("symlink");
        std::os::unix::fs::symlink(org.join("file.txt"), org.join("to-file")).expect("symlink");
        std::os::unix::fs::symlink("/nonexistent", org.join("dangling")).expect("symlink");
        let listed = DirSource::new(&org, "project.yaml")
            .folders()
            .expect("list");
        assert_eq!(listed, vec!["away".to_owned(), "real".to_owned()]);
    }
}
