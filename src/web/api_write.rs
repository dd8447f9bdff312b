//! The write API: resyncs on demand (SPEC §5). Both routes only enqueue;
//! the workers do the work, so the answer is 202.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::api_repos::repo_not_found;
use super::auth::WriteAccess;
use super::error::ApiError;
use super::extract::ApiPath;
use super::state::AppState;
use crate::controller::{Enqueue, ListingSchedule, WorkQueue};
use crate::registry;
use crate::source::RepoId;

/// Schedules an org-wide listing as soon as possible, on whichever replica
/// takes it. Shared by the API and the dashboard's "Resync all"; `via` says
/// which in the log.
pub async fn schedule_listing(state: &AppState, via: &str) -> Result<(), ApiError> {
    state
        .queue
        .request_listing()
        .await
        .map_err(|error| ApiError::unavailable("resync: cannot request a listing", &error))?;
    tracing::info!("resync: org-wide listing requested {via}");
    Ok(())
}

/// Enqueues one repository as a fresh trigger (any prefetched file is
/// ignored). Shared by the API and the dashboard's "Resync"; 404 when the
/// registry does not know the repository.
pub async fn enqueue_repo(
    state: &AppState,
    owner: &str,
    name: &str,
    via: &str,
) -> Result<RepoId, ApiError> {
    let id = registry::repo_id_by_full_name(&state.pool, owner, name)
        .await?
        .ok_or_else(|| repo_not_found(owner, name))?;
    state
        .queue
        .enqueue(vec![Enqueue::fresh(id)])
        .await
        .map_err(|error| ApiError::unavailable("resync: cannot enqueue", &error))?;
    tracing::info!(repo = %id, "resync: {owner}/{name} enqueued {via}");
    Ok(id)
}

/// `POST /api/v1/resync`: an org-wide listing as soon as possible.
pub async fn resync_all(
    _access: WriteAccess,
    State(state): State<AppState>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    schedule_listing(&state, "through the API").await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "status": "scheduled" }))))
}

/// `POST /api/v1/repos/{owner}/{name}/resync`: that repository afresh.
pub async fn resync_repo(
    _access: WriteAccess,
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let id = enqueue_repo(&state, &owner, &name, "through the API").await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "repo_id": id.0, "status": "queued" })),
    ))
}
