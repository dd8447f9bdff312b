//! The write API: resyncs on demand (docs/contract.md#http-routes). Both routes only enqueue
//! (see [`super::resync`]); the workers do the work, so the answer is 202.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::auth::WriteAccess;
use super::error::ApiError;
use super::extract::ApiPath;
use super::resync::{enqueue_repo, schedule_listing};
use super::state::AppState;

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
