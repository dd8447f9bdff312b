//! `GET /api/v1/projects` and `GET /api/v1/projects/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use super::params::ProjectParams;
use super::state::AppState;
use crate::registry::{self, EntryJson, Page};

/// The registry: every entry with its repository, filtered by `owner`,
/// `tag` and `q`, paginated.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ProjectParams>,
) -> Result<Json<Page<EntryJson>>, ApiError> {
    let filter = params.to_filter()?;
    Ok(Json(registry::list_projects(&state.pool, &filter).await?))
}

/// One entry by its name.
pub async fn detail(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<EntryJson>, ApiError> {
    registry::get_project(&state.pool, &name)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("project {name} not found")))
}
