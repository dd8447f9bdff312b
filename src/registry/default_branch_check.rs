//! The run on the default branch's head: a reconcile that applies a new
//! commit (or changes the status of the current one) stores, in its own
//! transaction, the intent to post what it found — `success` for
//! `synced`, `failure` with annotations for `invalid` or `conflict`.

use sqlx::PgConnection;

use super::check_runs::{self, CheckIntent};
use super::read_only::snapshot;
use super::RegistryError;
use crate::project::verdict::{evaluate, HeadFile, Parsed, Verdict};
use crate::source::{FileState, InstallationId, Observed, RepoId};

/// What a reconcile previewed before applying, to be posted once its
/// outcome is known.
#[derive(Debug)]
pub struct Pending {
    repo_id: RepoId,
    sha: String,
    installation_id: i64,
    owner: String,
    name: String,
    verdict: Verdict,
    /// The repository's first reconcile: only a failure is posted (see
    /// [`record`]).
    first: bool,
}

/// Previews `observed` against the registry as it is before the apply, on
/// the reconcile's transaction. `None` when there is nothing to post: no
/// file at a known commit, a repository outside an App installation, or a
/// commit already applied without trouble (`synced` at that sha).
pub async fn preview(
    conn: &mut PgConnection,
    id: RepoId,
    observed: &Observed,
    project_file: &str,
    old_status: &str,
    old_sha: Option<&str>,
) -> Result<Option<Pending>, RegistryError> {
    let Observed::Present { repo, file } = observed else {
        return Ok(None);
    };
    let Some(InstallationId(installation_id)) = repo.installation_id else {
        return Ok(None);
    };
    let (sha, head) = match file {
        FileState::Found { sha, bytes } => (sha, HeadFile::Found(bytes.clone())),
        FileState::Unreadable {
            sha: Some(sha),
            message,
        } => (sha, HeadFile::Unreadable(message.clone())),
        _ => return Ok(None),
    };
    if old_status == "synced" && old_sha == Some(sha.as_str()) {
        return Ok(None);
    }
    let parsed = Parsed::read(project_file, head);
    let registry = snapshot(conn, id, &parsed.names()).await?;
    Ok(Some(Pending {
        repo_id: id,
        sha: sha.clone(),
        installation_id,
        owner: repo.owner.clone(),
        name: repo.name.clone(),
        verdict: evaluate(project_file, sha, &parsed, &registry),
        first: old_sha.is_none() && old_status == "pending",
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
    let mut verdict = pending.verdict;
    match status {
        "synced" if pending.first => return Ok(()),
        "synced" => {}
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
