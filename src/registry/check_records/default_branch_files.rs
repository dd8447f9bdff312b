//! The default branch's run for a repository with several project files:
//! posted when any matching file changed (its blob, or the file added or
//! removed) or the status changed, naming each changed file; the changed
//! files are previewed as a pull request's are, the others keep their
//! entries.

use sqlx::PgConnection;

use super::default_branch_check::{Before, Pending};
use super::owner_check::{add_owner_notes, OwnerCheck};
use super::read_only::read_as_public;
use super::read_only::snapshot_for_default_branch;
use super::relation_check::{add_relation_notes, CheckedFile, Reading};
use crate::directory::OwnersMode;
use crate::project::files_verdict::{declared_names, evaluate_files, TouchedFile};
use crate::project::relations::RelationsMode;
use crate::project::verdict::{HeadFile, Parsed};
use crate::registry::entry_relations::FileRules;
use crate::registry::file_blobs;
use crate::registry::file_set::set_blob_of;
use crate::registry::touched_files::merge;
use crate::registry::RegistryError;
use crate::source::{
    FileContent, FileState, InstallationId, Observed, PathFile, RepoId, RepoInfo, BINARY_MESSAGE,
};

/// The repository and commit the run is about.
struct At<'a> {
    id: RepoId,
    installation: InstallationId,
    repo: &'a RepoInfo,
    sha: &'a str,
}

/// [`super::default_branch_check::preview`] for an observation of several
/// files (all of them, or those a push touched); `None` for any other
/// observation, or nothing to post.
pub(in crate::registry) async fn preview_files(
    conn: &mut PgConnection,
    id: RepoId,
    observed: &Observed,
    before: Before<'_>,
    rules: FileRules,
) -> Result<Option<Pending>, RegistryError> {
    let (repo, sha, files, blobs) = match observed {
        Observed::Present {
            repo,
            file: FileState::Files { sha, files },
        } => (repo, sha, files, file_blobs::of(files)),
        // Only the touched files were read: the others keep their blobs.
        Observed::Present {
            repo,
            file: FileState::Touched(touched),
        } => {
            let recorded = file_blobs::read(conn, id).await?.unwrap_or_default();
            let blobs = merge(recorded, &touched.files, &touched.gone);
            (repo, &touched.sha, &touched.files, blobs)
        }
        _ => return Ok(None),
    };
    let Some(installation) = repo.installation_id else {
        return Ok(None);
    };
    let at = At {
        id,
        installation,
        repo,
        sha,
    };
    preview(conn, at, files, &blobs, before, rules).await
}

async fn preview(
    conn: &mut PgConnection,
    at: At<'_>,
    files: &[PathFile],
    blobs: &file_blobs::FileBlobs,
    before: Before<'_>,
    rules: FileRules,
) -> Result<Option<Pending>, RegistryError> {
    let owners = rules.owners;
    let file_changed = before.blob != Some(set_blob_of(blobs).as_str());
    if before.status == "synced" && !file_changed {
        return Ok(None);
    }
    let old = file_blobs::read(conn, at.id).await?;
    let changed = file_blobs::changed(old.as_ref(), blobs);
    let touched: Vec<TouchedFile> = changed
        .iter()
        .map(|path| {
            let head = match files.iter().find(|f| &f.path == path).map(|f| &f.content) {
                None => HeadFile::Absent,
                Some(FileContent::Bytes(bytes)) => HeadFile::Found(bytes.clone()),
                Some(FileContent::Unreadable(message)) => {
                    // The source's line already names the path.
                    let reason = message
                        .strip_prefix(&format!("{path}: file: "))
                        .unwrap_or(message);
                    HeadFile::Unreadable(reason.to_owned())
                }
                Some(FileContent::Binary { .. }) => HeadFile::Unreadable(BINARY_MESSAGE.into()),
            };
            TouchedFile {
                path: path.clone(),
                parsed: Parsed::read(path, head),
            }
        })
        .collect();
    let names = declared_names(&touched);
    let registry = snapshot_for_default_branch(conn, at.id, &names, before.entries).await?;
    let first = before.sha.is_none() && before.status == "pending";
    let mut verdict = evaluate_files(at.sha, &touched, &registry, 0);
    // A first reconcile posts only a failure, which a warning never makes.
    if !(first && owners == OwnersMode::Warn) {
        for file in &touched {
            let check = OwnerCheck {
                installation: at.installation,
                project_file: &file.path,
                mode: owners,
                public_pull_request: false,
            };
            add_owner_notes(conn, &check, &file.parsed, &registry.entries, &mut verdict).await?;
        }
    }
    if !(first && rules.relations == RelationsMode::Warn) {
        let paths: Vec<String> = touched.iter().map(|t| t.path.clone()).collect();
        let reading = Reading {
            repo: at.id,
            paths: &paths,
            public: read_as_public(conn, at.id).await?,
        };
        let files = CheckedFile::all(&touched);
        let (mode, entries) = (rules.relations, &registry.entries);
        add_relation_notes(conn, mode, &reading, &files, entries, &mut verdict, false).await?;
    }
    Ok(Some(Pending {
        repo_id: at.id,
        sha: at.sha.to_owned(),
        installation_id: at.installation,
        owner: at.repo.owner.clone(),
        name: at.repo.name.clone(),
        verdict,
        first,
        file_changed,
        old_status: before.status.to_owned(),
        several: true,
    }))
}
