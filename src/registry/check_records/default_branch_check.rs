//! The run on the default branch's head: a reconcile that reads a project
//! file whose content (its blob id) differs from the last one read, or
//! that changes the repository's status, stores, in its own transaction,
//! the intent to post what it found — `success` for `synced`, `failure`
//! with annotations for `invalid` or `conflict`, and the owner lines that
//! name nobody current (a warning, or a failure under
//! `ROSTER_OWNERS=require`). A push that changed other files posts nothing.

use sqlx::PgConnection;

use super::check_runs::{self, CheckIntent};
use super::owner_check::{add_owner_notes, OwnerCheck};
use super::read_only::read_as_public;
use super::read_only::snapshot_for_default_branch;
use super::relation_check::{add_relation_notes, CheckedFile, Reading};
use crate::directory::OwnersMode;
use crate::project::preview::RegisteredEntry;
use crate::project::relations::RelationsMode;
use crate::project::verdict::{clip_summary, evaluate, HeadFile, Parsed, Verdict};
use crate::registry::entry_relations::FileRules;
use crate::registry::settled_pushes::blob_id;
use crate::registry::RegistryError;
use crate::source::{FileState, InstallationId, Observed, RepoId, BINARY_MESSAGE};

/// What a reconcile previewed before applying, to be posted once its
/// outcome is known.
#[derive(Debug)]
pub struct Pending {
    pub(in crate::registry) repo_id: RepoId,
    pub(in crate::registry) sha: String,
    pub(in crate::registry) installation_id: InstallationId,
    pub(in crate::registry) owner: String,
    pub(in crate::registry) name: String,
    pub(in crate::registry) verdict: Verdict,
    /// The repository's first reconcile: only a failure is posted (see
    /// [`record`]).
    pub(in crate::registry) first: bool,
    /// Whether the file differs from the one the last reconcile read.
    pub(in crate::registry) file_changed: bool,
    /// The status before the reconcile: a change of it posts too.
    pub(in crate::registry) old_status: String,
    /// Several project files: the reconcile's error (each failing file)
    /// goes into a failure the changed files alone do not explain.
    pub(in crate::registry) several: bool,
}

/// The state a reconcile starts from, as far as the check run cares.
#[derive(Debug, Clone, Copy)]
pub struct Before<'a> {
    pub status: &'a str,
    pub sha: Option<&'a str>,
    /// Git's blob id of the file the last reconcile read.
    pub blob: Option<&'a str>,
    /// The repository's entries, when the reconcile read them already (or
    /// knows there are none: it made the repository known).
    pub entries: Option<&'a [RegisteredEntry]>,
}

/// Previews `observed` against the registry as it is before the apply, on
/// the reconcile's transaction, its owners and relations checked under
/// `rules`. `None`
/// when there is nothing to post: no file at a known commit, a repository
/// outside an App installation, or the file applied last without trouble
/// (`synced` with that blob).
pub async fn preview(
    conn: &mut PgConnection,
    id: RepoId,
    observed: &Observed,
    project_file: &str,
    before: Before<'_>,
    rules: FileRules,
) -> Result<Option<Pending>, RegistryError> {
    let owners = rules.owners;
    let Before {
        status: old_status,
        sha: old_sha,
        blob: old_blob,
        entries,
    } = before;
    let Observed::Present { repo, file } = observed else {
        return Ok(None);
    };
    let Some(installation_id) = repo.installation_id else {
        return Ok(None);
    };
    let (sha, head) = match file {
        FileState::Found { sha, bytes } => (sha, HeadFile::Found(bytes.clone())),
        FileState::Unreadable {
            sha: Some(sha),
            message,
        } => (sha, HeadFile::Unreadable(message.clone())),
        FileState::Binary { sha, .. } => (sha, HeadFile::Unreadable(BINARY_MESSAGE.into())),
        _ => return Ok(None),
    };
    let blob = match file {
        FileState::Found { bytes, .. } => Some(blob_id(bytes)),
        FileState::Binary { blob, .. } => Some(blob.clone()),
        _ => None,
    };
    let file_changed = match old_blob {
        Some(old) => blob.as_deref() != Some(old),
        // Applied before blob ids were recorded: by its commit.
        None if old_status == "synced" => old_sha != Some(sha.as_str()),
        None => blob.is_some(),
    };
    if old_status == "synced" && !file_changed {
        return Ok(None);
    }
    let parsed = Parsed::read(project_file, head);
    let registry = snapshot_for_default_branch(conn, id, &parsed.names(), entries).await?;
    let first = old_sha.is_none() && old_status == "pending";
    let mut verdict = evaluate(project_file, sha, &parsed, &registry);
    // A first reconcile posts only a failure, which a warning never makes.
    if !(first && owners == OwnersMode::Warn) {
        let check = OwnerCheck {
            installation: installation_id,
            project_file,
            mode: owners,
            public_pull_request: false,
        };
        add_owner_notes(conn, &check, &parsed, &registry.entries, &mut verdict).await?;
    }
    if !(first && rules.relations == RelationsMode::Warn) {
        let paths = [project_file.to_owned()];
        let reading = Reading {
            repo: id,
            paths: &paths,
            public: read_as_public(conn, id).await?,
        };
        let files = [CheckedFile {
            path: project_file,
            parsed: &parsed,
        }];
        let (mode, entries) = (rules.relations, &registry.entries);
        add_relation_notes(conn, mode, &reading, &files, entries, &mut verdict, false).await?;
    }
    Ok(Some(Pending {
        repo_id: id,
        sha: sha.clone(),
        installation_id,
        owner: repo.owner.clone(),
        name: repo.name.clone(),
        verdict,
        first,
        file_changed,
        old_status: old_status.to_owned(),
        several: false,
    }))
}

/// Stores the intent once the reconcile decided `status` (on its
/// transaction): only `synced`, `invalid` and `conflict` are shown. A
/// repository's first reconcile (the App just installed, a repository just
/// created) posts only a failure: a `success` on every repository of a new
/// installation would cost one request each and tell nobody anything.
pub async fn record(
    conn: &mut PgConnection,
    pending: Pending,
    status: &str,
    error: Option<&str>,
) -> Result<(), RegistryError> {
    if !pending.file_changed && status == pending.old_status {
        // A push that changed other files, a listing that found it as it was.
        return Ok(());
    }
    let mut verdict = pending.verdict;
    match status {
        "synced" if pending.first && verdict.conclusion != "failure" => return Ok(()),
        "synced" => {}
        "invalid" | "conflict" if pending.several && verdict.conclusion != "failure" => {
            // Files the commit left as they are break a rule or lost a name.
            verdict.conclusion = "failure";
            verdict.title = status.into();
            verdict.summary = clip_summary(format!(
                "{}\nThe repository's files, as the registry applied them:\n\n```\n{}\n```\n",
                verdict.summary,
                error.unwrap_or(status)
            ));
        }
        "invalid" => verdict.conclusion = "failure",
        "conflict" if verdict.conclusion != "failure" => {
            // A name taken between the preview and the apply.
            verdict.conclusion = "failure";
            verdict.title = "conflict".into();
            verdict.summary = format!("```\n{}\n```\n", error.unwrap_or("a name is taken"));
        }
        "conflict" => {}
        _ => return Ok(()),
    }
    let intent = CheckIntent {
        repo_id: pending.repo_id,
        sha: pending.sha,
        pull_request: None,
        installation_id: pending.installation_id,
        owner: pending.owner,
        name: pending.name,
        conclusion: verdict.conclusion.to_owned(),
        title: verdict.title,
        summary: verdict.summary,
        annotations: serde_json::Value::Array(verdict.annotations),
    };
    check_runs::record_intent(conn, &intent).await?;
    Ok(())
}
