//! The blob id of each project file a repository's last reconcile read,
//! by path (repositories with several project files): what tells the
//! default branch's check which files a commit changed.

use std::collections::BTreeMap;

use sqlx::types::Json;
use sqlx::PgConnection;

use super::settled_pushes::blob_id;
use crate::source::{FileContent, PathFile, RepoId};

/// Path → Git's blob id of the file (of the reason it could not be read,
/// for a file that is not usable text, unless its blob was judged).
pub type FileBlobs = BTreeMap<String, String>;

/// The blobs of `files` as a reconcile records them.
pub fn of(files: &[PathFile]) -> FileBlobs {
    files
        .iter()
        .map(|file| {
            let id = match &file.content {
                FileContent::Bytes(bytes) => blob_id(bytes),
                FileContent::Unreadable(message) => blob_id(message.as_bytes()),
                // A judged blob is remembered as itself, so the next
                // listing of it reads nothing; else as its problem line.
                FileContent::Binary {
                    blob,
                    judged: Some(_),
                } => blob.clone(),
                FileContent::Binary { judged: None, .. } => {
                    blob_id(FileContent::binary_line(&file.path).as_bytes())
                }
            };
            (file.path.clone(), id)
        })
        .collect()
}

/// What the last reconcile of `repo` recorded (`None`: it read one file,
/// or none, or was recorded before the blobs were).
pub async fn read(conn: &mut PgConnection, repo: RepoId) -> Result<Option<FileBlobs>, sqlx::Error> {
    let row: Option<(Option<Json<FileBlobs>>,)> =
        sqlx::query_as("select file_blobs from repositories where id = $1")
            .bind(repo)
            .fetch_optional(conn)
            .await?;
    Ok(row.and_then(|(blobs,)| blobs).map(|Json(blobs)| blobs))
}

/// Records `blobs` for `repo` on the reconcile's transaction.
pub async fn write(
    conn: &mut PgConnection,
    repo: RepoId,
    blobs: &FileBlobs,
) -> Result<(), sqlx::Error> {
    sqlx::query("update repositories set file_blobs = $2 where id = $1")
        .bind(repo)
        .bind(Json(blobs))
        .execute(conn)
        .await?;
    Ok(())
}

/// The paths whose file differs between `old` and `new`: added, changed
/// or removed, in path order. Every path of `new` when nothing was
/// recorded.
pub fn changed(old: Option<&FileBlobs>, new: &FileBlobs) -> Vec<String> {
    let Some(old) = old else {
        return new.keys().cloned().collect();
    };
    let mut paths: Vec<String> = new
        .iter()
        .filter(|(path, blob)| old.get(*path) != Some(*blob))
        .map(|(path, _)| path.clone())
        .chain(old.keys().filter(|p| !new.contains_key(*p)).cloned())
        .collect();
    paths.sort();
    paths
}

#[cfg(test)]
mod tests;
