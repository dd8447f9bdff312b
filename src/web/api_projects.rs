//! `GET /api/v1/projects` and `GET /api/v1/projects/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::error::{ApiError, ErrorJson};
use super::extract::{ApiPath, ApiQuery};
use super::json::{EntryJson, PageJson};
use super::params::ProjectParams;
use super::privacy::Privacy;
use super::state::AppState;
use crate::registry;

/// The registry: every entry with its repository, filtered by `owner`,
/// `tag` and `q`, paginated.
#[utoipa::path(get, path = "/api/v1/projects", operation_id = "list_projects",
    tag = "registry", params(ProjectParams),
    responses((status = 200, description = "A page of entries", body = PageJson<EntryJson>),
              (status = 400, description = "A bad parameter", body = ErrorJson)))]
pub async fn list(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ProjectParams>,
) -> Result<Json<PageJson<EntryJson>>, ApiError> {
    let filter = params.to_filter()?;
    let mut page = registry::list_projects(&state.pool, &filter).await?;
    if filter.owner.is_some() {
        page.items = privacy.found_by_owner(page.items);
    }
    page.items = privacy.entries(page.items);
    Ok(Json(PageJson::of(page)))
}

/// One entry by its name.
#[utoipa::path(get, path = "/api/v1/projects/{name}", operation_id = "get_project",
    tag = "registry",
    params(("name" = String, Path, description = "The project's name")),
    responses((status = 200, description = "The entry", body = EntryJson),
              (status = 404, description = "No such project", body = ErrorJson)))]
pub async fn detail(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<EntryJson>, ApiError> {
    registry::get_project(&state.pool, &name)
        .await?
        .map(|entry| Json(privacy.entry(entry).into()))
        .ok_or_else(|| ApiError::NotFound(format!("project {name} not found")))
}
