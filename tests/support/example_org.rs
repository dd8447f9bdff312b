//! The example organisation (`examples/org`) reconciled into a registry
//! in process, as the `dir:` source of the README's first command reads it:
//! its teams, then every folder once through the registry's handler.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use roster::controller::{Handler, Storage};
use roster::db::queue::PgQueue;
use roster::directory::DirectoryDb;
use roster::project::patterns::ProjectFiles;
use roster::source::dir::{repo_id, teams, DirSource, DirStorage};
use sqlx::PgPool;

/// The files the README's first command reads in each folder.
pub const PROJECT_FILES: &str = "project.yaml,services/*/project.yaml";

/// A copy of the example organisation in `to`, without the files named
/// in `leaving_out` (paths relative to its root).
pub fn copy(to: &Path, leaving_out: &[&str]) {
    copy_dir(&root(), to, &root(), leaving_out);
}

fn copy_dir(from: &Path, to: &Path, root: &Path, leaving_out: &[&str]) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read the example") {
        let entry = entry.expect("entry");
        let path = entry.path();
        let relative = path.strip_prefix(root).expect("under the root");
        if leaving_out.iter().any(|l| Path::new(l) == relative) {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&path, &target, root, leaving_out);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

/// Where the example organisation lies.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/org")
}

/// Reads the example organisation's teams and every folder into the
/// registry on `pool`; returns how many folders were reconciled.
pub async fn load(pool: &PgPool, queue: Arc<PgQueue>) -> usize {
    load_folder(&root(), pool, queue).await
}

/// Like [`load`], for a folder laid out as the example organisation (a
/// copy of it with a file changed or left out).
pub async fn load_folder(root: &Path, pool: &PgPool, queue: Arc<PgQueue>) -> usize {
    let root = root.to_path_buf();
    let directory = DirectoryDb::new(pool.clone());
    assert!(
        teams::sync_once(&root, &directory).await,
        "the folder's teams.yaml reads"
    );
    let files = ProjectFiles::parse(PROJECT_FILES).expect("the README's patterns");
    let source = DirSource::with_files(root, files);
    let storage = DirStorage {
        source: source.clone(),
    };
    let handler = crate::registry::handler(pool, queue);
    let folders = source.folders().expect("examples/org lists");
    for folder in &folders {
        let id = repo_id(folder);
        let observed = storage.get(&id, None).await;
        handler
            .apply(&id, observed)
            .await
            .unwrap_or_else(|e| panic!("{folder}: {e:?}"));
    }
    folders.len()
}
