//! The deletion guard's holds (docs/contract.md#repository-statuses, docs/contract.md#http-routes): which removals wait for an
//! operator, and the release that lets them proceed.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::auth::WriteAccess;
use super::error::{ApiError, ErrorJson, WriteRefused};
use super::extract::ApiPath;
use super::json::{ActiveHoldJson, PageJson};
use super::state::AppState;
use crate::controller::{Enqueue, WorkQueue};
use crate::registry;

/// `GET /api/v1/holds`: every active hold (there are few: at most one per
/// installation), so the list is one page.
#[utoipa::path(get, path = "/api/v1/holds", operation_id = "list_holds",
    tag = "operators",
    responses((status = 200, description = "The active holds", body = PageJson<ActiveHoldJson>)))]
pub async fn list(
    State(state): State<AppState>,
) -> Result<Json<PageJson<ActiveHoldJson>>, ApiError> {
    let holds = registry::active_holds(&state.pool).await?;
    Ok(Json(PageJson::whole(holds)))
}

/// The answer to a release: how many repositories' removals proceed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReleasedJson {
    pub released: usize,
}

/// `POST /api/v1/holds/{id}/release`: releases an active hold and enqueues
/// its repositories, whose removals then proceed; 404 when no active hold
/// has that id.
#[utoipa::path(post, path = "/api/v1/holds/{id}/release", operation_id = "release_hold",
    tag = "operators",
    security(("token" = [])),
    params(("id" = u64, Path, minimum = 1, description = "The hold's id")),
    responses((status = 200, description = "Released", body = ReleasedJson),
              WriteRefused,
              (status = 404, description = "No active hold of that id", body = ErrorJson)))]
pub async fn release(
    _access: WriteAccess,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ReleasedJson>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no active hold {id}"));
    let hold: i64 = id.parse().map_err(|_| not_found())?;
    let repos = registry::release_hold(&state.pool, hold)
        .await?
        .ok_or_else(not_found)?;
    let released = repos.len();
    if !repos.is_empty() {
        // Released already: should this fail, the next listing sweeps them,
        // and the sweep lets released repositories through.
        state
            .queue
            .enqueue(repos.into_iter().map(Enqueue::fresh).collect())
            .await
            .map_err(|error| {
                ApiError::unavailable("holds: cannot enqueue released repositories", &error)
            })?;
    }
    tracing::info!(
        hold,
        released,
        "deletion guard: hold {hold} released through the API"
    );
    Ok(Json(ReleasedJson { released }))
}
