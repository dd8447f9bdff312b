//! The write API: resyncs on demand (docs/contract.md#http-routes). Both routes only enqueue
//! (see [`super::resync`]); the workers do the work, so the answer is 202.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;

use super::auth::WriteAccess;
use super::error::{ApiError, ErrorJson, WriteRefused};
use super::extract::ApiPath;
use super::resync::{enqueue_repo, schedule_listing};
use super::state::AppState;

/// The answer to `POST /api/v1/resync`: the listing is scheduled.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ScheduledJson {
    /// Always `scheduled`.
    pub status: &'static str,
}

/// The answer to a repository's resync: its id is queued.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct QueuedJson {
    pub repo_id: i64,
    /// Always `queued`.
    pub status: &'static str,
}

/// `POST /api/v1/resync`: an org-wide listing as soon as possible.
#[utoipa::path(post, path = "/api/v1/resync", operation_id = "resync_all",
    tag = "operators",
    security(("token" = [])),
    responses((status = 202, description = "Scheduled", body = ScheduledJson),
              WriteRefused))]
pub async fn resync_all(
    _access: WriteAccess,
    State(state): State<AppState>,
) -> Result<(StatusCode, Json<ScheduledJson>), ApiError> {
    schedule_listing(&state, "through the API").await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(ScheduledJson {
            status: "scheduled",
        }),
    ))
}

/// `POST /api/v1/repos/{owner}/{name}/resync`: that repository afresh.
#[utoipa::path(post, path = "/api/v1/repos/{owner}/{name}/resync", operation_id = "resync_repo",
    tag = "operators",
    security(("token" = [])),
    params(("owner" = String, Path, description = "The repository's owner"),
           ("name" = String, Path, description = "The repository's name")),
    responses((status = 202, description = "Queued", body = QueuedJson),
              WriteRefused,
              (status = 404, description = "No such repository", body = ErrorJson)))]
pub async fn resync_repo(
    _access: WriteAccess,
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> Result<(StatusCode, Json<QueuedJson>), ApiError> {
    let id = enqueue_repo(&state, &owner, &name, "through the API").await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(QueuedJson {
            repo_id: id.0,
            status: "queued",
        }),
    ))
}
