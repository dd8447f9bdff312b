//! Finds the project files of one local repository: the paths inside its
//! folder that match the patterns, without following a link or walking
//! folders no pattern reaches, and within a bound of entries looked at.

use std::io;
use std::path::Path;

use crate::project::patterns::{too_many_files, MAX_FILES_PER_REPO};
use crate::project::ProjectFiles;

/// Files and folders one walk looks at, at most: a folder with a huge tree
/// (a vendored dependency under `**`) costs a bounded time, then the
/// repository is `invalid` and keeps its entries.
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// What a walk of one repository's folder found.
#[derive(Debug, PartialEq, Eq)]
pub enum Walked {
    /// The matching paths (files, or anything else lying there), sorted.
    Paths(Vec<String>),
    /// The folder is gone.
    FolderGone,
    /// The set cannot be used; the message reads `file: …`.
    Refused(String),
}

/// Walks `root/folder` for paths matching `files`.
pub fn matching_paths(root: &Path, folder: &str, files: &ProjectFiles) -> io::Result<Walked> {
    let base = root.join(folder);
    match std::fs::symlink_metadata(&base) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Walked::FolderGone),
        Err(e) => return Err(e),
        Ok(meta) if meta.file_type().is_symlink() => {
            return Ok(Walked::Refused(
                "file: the repository's folder is a link, not a folder inside the source folder"
                    .into(),
            ))
        }
        Ok(meta) if !meta.is_dir() => return Ok(Walked::FolderGone),
        Ok(_) => {}
    }
    let mut found = Vec::new();
    let mut seen = 0usize;
    let mut folders = vec![String::new()];
    while let Some(dir) = folders.pop() {
        let entries = match std::fs::read_dir(base.join(&dir)) {
            Ok(entries) => entries,
            // Removed while walking: the next change enqueues it again.
            Err(e) if e.kind() == io::ErrorKind::NotFound && !dir.is_empty() => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return Ok(Walked::Refused(format!(
                    "file: more than {MAX_WALK_ENTRIES} files and folders to search for project files"
                )));
            }
            // Names that are not UTF-8 cannot be a path in a message or the registry.
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if files.matches(&path) {
                found.push(path.clone());
                if found.len() > MAX_FILES_PER_REPO {
                    return Ok(Walked::Refused(format!("file: {}", too_many_files())));
                }
            }
            // `file_type` does not follow links: a link is never walked into.
            if entry.file_type()?.is_dir() && files.may_hold(&path) {
                folders.push(path);
            }
        }
    }
    found.sort();
    Ok(Walked::Paths(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(root: &Path, patterns: &str) -> Walked {
        let files = ProjectFiles::parse(patterns).expect("patterns");
        matching_paths(root, "repo", &files).expect("walk")
    }

    #[test]
    fn walk_should_find_matching_paths_sorted_and_skip_other_folders() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        for sub in ["services/b", "services/a", "services/a/deep", "docs"] {
            std::fs::create_dir_all(repo.join(sub)).expect("mkdir");
        }
        for file in [
            "project.yaml",
            "services/b/project.yaml",
            "services/a/project.yaml",
            "services/a/deep/project.yaml",
            "docs/project.yaml",
        ] {
            std::fs::write(repo.join(file), "x").expect("write");
        }
        assert_eq!(
            walk(dir.path(), "project.yaml,services/*/project.yaml"),
            Walked::Paths(vec![
                "project.yaml".into(),
                "services/a/project.yaml".into(),
                "services/b/project.yaml".into()
            ])
        );
        let Walked::Paths(all) = walk(dir.path(), "**/project.yaml") else {
            panic!("not paths");
        };
        assert_eq!(all.len(), 5);
    }

    #[test]
    fn walk_should_list_a_folder_or_link_at_a_matching_path_without_entering_links() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(repo.join("svc/a/project.yaml")).expect("mkdir");
        std::fs::create_dir_all(repo.join("svc/b")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("project.yaml"), "x").expect("write");
        std::os::unix::fs::symlink(
            outside.join("project.yaml"),
            repo.join("svc/b/project.yaml"),
        )
        .expect("symlink");
        std::os::unix::fs::symlink(&outside, repo.join("svc/c")).expect("symlink");
        assert_eq!(
            walk(dir.path(), "svc/*/project.yaml"),
            Walked::Paths(vec![
                "svc/a/project.yaml".into(),
                "svc/b/project.yaml".into()
            ])
        );
    }

    #[test]
    fn walk_should_refuse_more_than_500_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        for n in 0..=MAX_FILES_PER_REPO {
            std::fs::create_dir_all(repo.join(format!("s/{n}"))).expect("mkdir");
            std::fs::write(repo.join(format!("s/{n}/project.yaml")), "x").expect("write");
        }
        assert_eq!(
            walk(dir.path(), "s/*/project.yaml"),
            Walked::Refused("file: more than 500 project files".into())
        );
    }

    #[test]
    fn walk_should_tell_a_gone_folder_and_a_folder_that_is_a_link() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(walk(dir.path(), "**/project.yaml"), Walked::FolderGone);
        let outside = tempfile::tempdir().expect("temp dir");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("repo")).expect("symlink");
        assert!(matches!(
            walk(dir.path(), "**/project.yaml"),
            Walked::Refused(_)
        ));
    }
}
