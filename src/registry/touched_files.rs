//! A push's partial read applied (docs/architecture.md#pushes-that-touch-project-files):
//! only the project files its commits touched were read, at its `after`;
//! every other file's entries and blob stay as recorded. It applies only
//! while the repository is `synced` or `no_file` at the push's `before`
//! under the current fingerprint, and while the touched files' names do
//! not meet an untouched file's; otherwise [`RegistryError::ReadAgain`]
//! (nothing written) and the repository is read whole.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgConnection;

use super::entries;
use super::entry_relations::FileRules;
use super::file_blobs::{self, FileBlobs};
use super::file_set::{self, MAX_REPO_ENTRIES};
use super::judged_files;
use super::outcome::Decision;
use super::repos::RepoState;
use super::{RegistryError, Status};
use crate::project::patterns::MAX_FILES_PER_REPO;
use crate::source::{FileState, InstallationId, Observed, PathFile, RepoId, TouchedFiles};

/// `observed` ready for the decision: a partial read whose base no longer
/// holds is [`RegistryError::ReadAgain`]; one that leaves no project file
/// is the definite answer that none is left at its commit; a binary file
/// whose blob the registry judged keeps that judgement
/// ([`judged_files::settle`]); anything else is returned as it is. Runs in
/// the reconcile's transaction, after the repository's row was locked
/// (`old`).
pub(super) async fn complete(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    fingerprint: &str,
    observed: Observed,
) -> Result<Observed, RegistryError> {
    let observed = judged_files::settle(conn, id, old, observed).await?;
    let Observed::Present {
        repo,
        file: FileState::Touched(touched),
    } = observed
    else {
        return Ok(observed);
    };
    let held = matches!(old.status, Status::Synced | Status::NoFile)
        && old.synced_sha.as_deref() == Some(touched.before.as_str())
        && recorded_fingerprint(conn, id).await?.as_deref() == Some(fingerprint);
    if !held {
        return Err(RegistryError::ReadAgain);
    }
    let merged = merged(conn, id, old, &touched.files, &touched.gone).await?;
    if merged.is_empty() {
        let sha = Some(touched.sha);
        let file = FileState::Absent { sha };
        return Ok(Observed::Present { repo, file });
    }
    let file = FileState::Touched(touched);
    Ok(Observed::Present { repo, file })
}

/// Every project file's blob after the push: those recorded, less the
/// touched paths, plus the touched files found. `ReadAgain` when the
/// blobs were not recorded, or past the bound of files (a full read says
/// what that means).
pub(super) async fn merged(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    files: &[PathFile],
    gone: &[String],
) -> Result<FileBlobs, RegistryError> {
    let blobs = match file_blobs::read(conn, id).await? {
        Some(blobs) => merge(blobs, files, gone),
        None if old.status == Status::NoFile => merge(FileBlobs::new(), files, gone),
        None => return Err(RegistryError::ReadAgain),
    };
    if blobs.len() > MAX_FILES_PER_REPO {
        return Err(RegistryError::ReadAgain);
    }
    Ok(blobs)
}

/// `recorded` less the `gone` paths, with the blobs of `files`.
pub(super) fn merge(mut recorded: FileBlobs, files: &[PathFile], gone: &[String]) -> FileBlobs {
    for path in gone {
        recorded.remove(path);
    }
    recorded.extend(file_blobs::of(files));
    recorded
}

/// Applies the touched files found and gone, as [`file_set::decide`]
/// applies a full set: each valid file's entries, an invalid one's kept;
/// the untouched files' entries kept.
pub(super) async fn decide_touched_files(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    touched: &TouchedFiles,
    owned: Option<BTreeSet<String>>,
    rules: (FileRules, Option<InstallationId>),
) -> Result<Decision, RegistryError> {
    let TouchedFiles {
        sha, files, gone, ..
    } = touched;
    let blobs = merged(conn, id, old, files, gone).await?;
    let paths: BTreeSet<&str> = files
        .iter()
        .map(|f| f.path.as_str())
        .chain(gone.iter().map(String::as_str))
        .collect();
    // (name, path) of the entries of touched paths, and of the others.
    let (old_touched, untouched): (Vec<_>, Vec<_>) = entries::paths(conn, id)
        .await?
        .into_iter()
        .partition(|(_, path)| paths.contains(path.as_str()));
    let plan = file_set::plan_of(conn, id, files, &old_touched, rules).await?;
    // A touched file naming what an untouched one holds: which keeps it
    // depends on both files' paths and contents; a full read decides.
    let untouched: BTreeMap<String, String> = untouched.into_iter().collect();
    if plan.desired.iter().any(|d| untouched.contains_key(&d.name)) {
        return Err(RegistryError::ReadAgain);
    }
    let mut keep = plan.keep.clone();
    keep.extend(untouched.into_keys());
    if plan.desired.len() + keep.len() > MAX_REPO_ENTRIES {
        return Err(RegistryError::ReadAgain);
    }
    file_blobs::write(conn, id, &blobs).await?;
    let changes = entries::apply(conn, id, sha, &plan.desired, &keep, owned).await?;
    let blob = Some(file_set::set_blob_of(&blobs));
    Ok(file_set::decision(old, sha, &plan, changes, blob))
}

/// The fingerprint the repository's state was decided under.
async fn recorded_fingerprint(
    conn: &mut PgConnection,
    id: RepoId,
) -> Result<Option<String>, sqlx::Error> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("select fingerprint from repositories where id = $1")
            .bind(id)
            .fetch_optional(conn)
            .await?;
    Ok(row.and_then(|(fingerprint,)| fingerprint))
}
