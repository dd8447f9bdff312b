//! `GET /api/v1/repos` and `GET /api/v1/repos/{owner}/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use super::error::{repo_not_found, ApiError, BadParameter, ErrorJson};
use super::extract::{ApiPath, ApiQuery};
use super::json::{CheckJson, PageJson, RepoDetailJson, RepoJson};
use super::params::RepoParams;
use super::privacy::Privacy;
use super::state::AppState;
use crate::registry::budget::{json_len, keep_within, ITEMS_BUDGET};
use crate::registry::check_records::check_runs::recent_checks;
use crate::registry::{self, RepoFilter};

/// Repositories with their status, filtered by `status` and `q`, paginated.
#[utoipa::path(get, path = "/api/v1/repos", operation_id = "list_repos",
    tag = "repositories", params(RepoParams),
    responses((status = 200, description = "A page of repositories", body = PageJson<RepoJson>),
              BadParameter))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<RepoParams>,
) -> Result<Json<PageJson<RepoJson>>, ApiError> {
    let filter = RepoFilter {
        relations: state.relations,
        ..params.to_filter()?
    };
    let page = registry::list_repos(&state.pool, &filter).await?;
    Ok(Json(PageJson::of(page)))
}

/// A repository's detail with its recent check runs.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RepoWithChecks {
    #[serde(flatten)]
    pub detail: RepoDetailJson,
    /// Newest first, at most 20.
    pub checks: Vec<CheckJson>,
    /// Set when the entries did not all fit in one answer: pass it back as
    /// `?entries_after=` for the next ones.
    pub entries_next_cursor: Option<String>,
}

/// `?entries_after=NAME`: a repository's entries after that name (its
/// detail's `entries_next_cursor`).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DetailParams {
    pub entries_after: Option<String>,
}

/// One repository, its entries, its recent events and check runs. The
/// answer stays under the byte bound of every answer that lists things: a
/// repository of many large entries gives the first ones and
/// `entries_next_cursor`.
#[utoipa::path(get, path = "/api/v1/repos/{owner}/{name}", operation_id = "get_repo",
    tag = "repositories", security((), ("token" = [])),
    params(("owner" = String, Path, description = "The repository's owner"),
           ("name" = String, Path, description = "The repository's name"), DetailParams),
    responses((status = 200, description = "The repository", body = RepoWithChecks),
              (status = 404, description = "No such repository", body = ErrorJson)))]
pub async fn detail(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    ApiQuery(params): ApiQuery<DetailParams>,
) -> Result<Json<RepoWithChecks>, ApiError> {
    let mut detail = registry::get_repo_under(&state.pool, &owner, &name, state.relations)
        .await?
        .ok_or_else(|| repo_not_found(&owner, &name))?;
    detail.entries = privacy.entries(detail.entries);
    let mut detail: RepoDetailJson = detail.into();
    let checks: Vec<CheckJson> = recent_checks(&state.pool, detail.repo.id)
        .await?
        .into_iter()
        .map(CheckJson::from)
        .collect();
    if let Some(after) = params.entries_after.as_deref().filter(|a| !a.is_empty()) {
        detail.entries.retain(|e| e.name.as_str() > after);
    }
    let around = json_len(&detail.repo) + json_len(&detail.events) + json_len(&checks);
    let cut = keep_within(
        &mut detail.entries,
        ITEMS_BUDGET.saturating_sub(around),
        json_len,
    );
    let entries_next_cursor = cut
        .then(|| detail.entries.last().map(|e| e.name.clone()))
        .flatten();
    Ok(Json(RepoWithChecks {
        detail,
        checks,
        entries_next_cursor,
    }))
}

/// The project file's JSON Schema, for editors.
pub async fn project_schema() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/schema+json")],
        crate::project::PROJECT_SCHEMA,
    )
}
