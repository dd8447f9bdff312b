//! `GET /api/v1/projects` and `GET /api/v1/projects/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use super::json::{EntryJson, PageJson};
use super::params::ProjectParams;
use super::state::AppState;
use crate::registry;

/// The registry: every entry with its repository, filtered by `owner`,
/// `tag` and `q`, paginated.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ProjectParams>,
) -> Result<Json<PageJson<EntryJson>>, ApiError> {
    let filter = params.to_filter()?;
    let page = registry::list_projects(&state.pool, &filter).await?;
    Ok(Json(PageJson::of(page)))
}

/// One entry by its name.
pub async fn detail(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<EntryJson>, ApiError> {
    registry::get_project(&state.pool, &name)
        .await?
        .map(|entry| Json(entry.into()))
        .ok_or_else(|| ApiError::NotFound(format!("project {name} not found")))
}
