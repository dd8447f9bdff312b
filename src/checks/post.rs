//! Posts one stored intent to GitHub: updates the commit's `Roster` run
//! when it exists, creates it otherwise, and sends annotations 50 at a
//! time (GitHub's limit per request).

use serde_json::{json, Value};
use sqlx::PgPool;

use super::budget::ChecksBudget;
use crate::controller::Backoff;
use crate::github::checks_api::{ChecksApi, PostError, ANNOTATIONS_PER_REQUEST};
use crate::github::http::CallError;
use crate::github::rate_limit::Resource;
use crate::project::invisible::escape_invisible;
use crate::project::verdict::{clip_summary, escape_annotation};
use crate::registry::check_records::check_runs::{self, DuePost};
use crate::registry::RegistryError;

/// How a post ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    Done {
        run_id: i64,
        requests: usize,
    },
    /// The installation refused the permission; nothing more is tried for it.
    Denied,
    /// Tried again later.
    Retry(String),
}

/// Posts `due` and records the outcome.
/// Each write waits for the installation's turn (`budget`).
pub async fn post(
    pool: &PgPool,
    api: &ChecksApi,
    backoff: &Backoff,
    budget: &ChecksBudget,
    due: &DuePost,
) -> Result<Posted, RegistryError> {
    let intent = &due.intent;
    let mut run_id = due.run_id;
    let mut requests = 0;
    let sent = send(pool, api, budget, due, &mut run_id, &mut requests).await;
    match sent {
        Ok(id) => {
            check_runs::mark_posted(pool, intent.repo_id, &intent.sha, due.version, id).await?;
            Ok(Posted::Done {
                run_id: id,
                requests,
            })
        }
        Err(PostError::Denied(message)) => {
            if check_runs::record_denied(pool, intent.installation_id, &message).await? {
                tracing::warn!(
                    installation = %intent.installation_id,
                    "GitHub refused to let the App write checks: {message}; no check run is \
                     posted for this installation until its permissions change \
                     (grant `checks: write`)"
                );
            }
            Ok(Posted::Denied)
        }
        Err(PostError::Call(CallError::Status {
            status: 422,
            message,
            ..
        })) => {
            // GitHub refuses this run for good (a commit it no longer has):
            // trying again would change nothing.
            let message = format!("GitHub refused the check run (422): {message}");
            tracing::warn!(repo = %intent.repo_id, sha = %intent.sha, %message, "check run not posted");
            check_runs::mark_refused(pool, intent.repo_id, &intent.sha, due.version, &message)
                .await?;
            Ok(Posted::Retry(message))
        }
        Err(PostError::Call(error)) => {
            let wait = match &error {
                CallError::RateLimited { wait, .. } | CallError::BudgetSpent { wait, .. } => *wait,
                _ => backoff.delay(u32::try_from(due.attempts).unwrap_or(0).saturating_add(1)),
            };
            let message = error.to_string();
            tracing::warn!(repo = %intent.repo_id, sha = %intent.sha, %message, retry_in = ?wait, "check run not posted");
            check_runs::mark_failed(pool, intent.repo_id, &intent.sha, run_id, &message, wait)
                .await?;
            Ok(Posted::Retry(message))
        }
    }
}

/// The requests of one post; `run_id` is kept up to date as it goes, so a
/// failure after the create still remembers the run.
async fn send(
    pool: &PgPool,
    api: &ChecksApi,
    budget: &ChecksBudget,
    due: &DuePost,
    run_id: &mut Option<i64>,
    requests: &mut usize,
) -> Result<i64, PostError> {
    let intent = &due.intent;
    let (inst, owner, name) = (
        intent.installation_id,
        intent.owner.as_str(),
        intent.name.as_str(),
    );
    let annotations: Vec<Value> = intent.annotations.as_array().cloned().unwrap_or_default();
    let mut batches = annotations.chunks(ANNOTATIONS_PER_REQUEST);
    let first = batches.next().map(<[Value]>::to_vec).unwrap_or_default();
    let body = json!({
        "status": "completed",
        "conclusion": intent.conclusion,
        "completed_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "output": output(due, first),
    });
    // The caller took the budget of the first request; every further one
    // (the create after a look, each batch of annotations) takes its own,
    // so a post never spends below the sync's line.
    let repositories = if budget.reserve {
        crate::registry::count_of_installation(pool, inst)
            .await
            .unwrap_or(0)
    } else {
        0
    };
    let spend = |requests: &usize| -> Result<(), CallError> {
        if *requests == 0 {
            return Ok(());
        }
        budget.spend(api, inst, Resource::Core, repositories)
    };
    if run_id.is_none() && due.create_sent {
        // A create may have reached GitHub before a crash: look first.
        spend(requests)?;
        *requests += 1;
        *run_id = api.find_run(inst, owner, name, &intent.sha).await?;
    }
    let turn = || async {
        budget
            .turn(inst)
            .await
            .map_err(|wait| CallError::RateLimited {
                wait,
                message: "the installation's turn to write a check run is later".into(),
            })
    };
    let id = match *run_id {
        Some(id) => {
            spend(requests)?;
            turn().await?;
            *requests += 1;
            api.update_run(inst, owner, name, id, body).await?;
            id
        }
        None => {
            check_runs::mark_create_sent(pool, intent.repo_id, &intent.sha)
                .await
                .map_err(|e| CallError::unexpected("recording a create", e))?;
            spend(requests)?;
            turn().await?;
            *requests += 1;
            let id = api.create_run(inst, owner, name, &intent.sha, body).await?;
            *run_id = Some(id);
            id
        }
    };
    for batch in batches {
        spend(requests)?;
        turn().await?;
        *requests += 1;
        let more = json!({ "output": output(due, batch.to_vec()) });
        api.update_run(inst, owner, name, id, more).await?;
    }
    Ok(id)
}

/// The run's output. Intents stored before the byte limit and the escaping
/// of invisible characters existed get both here too, so nothing GitHub
/// would refuse, or that would read other than it is, is sent.
fn output(due: &DuePost, annotations: Vec<Value>) -> Value {
    let intent = &due.intent;
    json!({
        "title": escape_invisible(&intent.title),
        "summary": clip_summary(escape_invisible(&intent.summary).into_owned()),
        "annotations": annotations.into_iter().map(escape_annotation).collect::<Vec<_>>(),
    })
}
