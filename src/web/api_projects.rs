//! `GET /api/v1/projects` and `GET /api/v1/projects/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::error::{ApiError, BadParameter, ErrorJson};
use super::extract::{ApiPath, ApiQuery};
use super::json::{EntryJson, PageJson, ProjectJson};
use super::params::ProjectParams;
use super::privacy::Privacy;
use super::state::AppState;
use crate::registry;
use crate::registry::read_models::relations;

/// The registry: every entry with its repository, filtered by `owner`,
/// `tag` and `q`, paginated.
#[utoipa::path(get, path = "/api/v1/projects", operation_id = "list_projects",
    tag = "registry", security((), ("token" = [])), params(ProjectParams),
    responses((status = 200, description = "A page of entries", body = PageJson<EntryJson>),
              BadParameter))]
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

/// One entry by its name, with who depends on it and whether each of its
/// dependencies resolves (docs/contract.md#relations).
#[utoipa::path(get, path = "/api/v1/projects/{name}", operation_id = "get_project",
    tag = "registry", security((), ("token" = [])),
    params(("name" = String, Path, description = "The project's name")),
    responses((status = 200, description = "The entry and its relations", body = ProjectJson),
              (status = 404, description = "No such project", body = ErrorJson)))]
pub async fn detail(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ProjectJson>, ApiError> {
    let Some(entry) = registry::get_project(&state.pool, &name).await? else {
        return Err(ApiError::NotFound(format!("project {name} not found")));
    };
    let dependents = relations::dependents_of(&state.pool, &entry.name).await?;
    let there = relations::existing(&state.pool, &entry.fields.depends_on).await?;
    let entry = EntryJson::from(privacy.entry(entry));
    Ok(Json(ProjectJson::new(entry, dependents, |name| {
        there.contains(name)
    })))
}
