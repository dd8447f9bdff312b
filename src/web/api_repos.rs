//! `GET /api/v1/repos` and `GET /api/v1/repos/{owner}/{name}` (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::error::{repo_not_found, ApiError};
use super::extract::{ApiPath, ApiQuery};
use super::params::RepoParams;
use super::state::AppState;
use crate::registry::check_runs::{recent_checks, CheckJson};
use crate::registry::{self, Page, RepoDetailJson, RepoJson};

/// Repositories with their status, filtered by `status` and `q`, paginated.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<RepoParams>,
) -> Result<Json<Page<RepoJson>>, ApiError> {
    let filter = params.to_filter()?;
    Ok(Json(registry::list_repos(&state.pool, &filter).await?))
}

/// A repository's detail with its recent check runs.
#[derive(Debug, serde::Serialize)]
pub struct RepoWithChecks {
    #[serde(flatten)]
    pub detail: RepoDetailJson,
    /// Newest first, at most 20.
    pub checks: Vec<CheckJson>,
}

/// One repository, its entries, its recent events and check runs.
pub async fn detail(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> Result<Json<RepoWithChecks>, ApiError> {
    let detail = registry::get_repo(&state.pool, &owner, &name)
        .await?
        .ok_or_else(|| repo_not_found(&owner, &name))?;
    let checks = recent_checks(&state.pool, detail.repo.id).await?;
    Ok(Json(RepoWithChecks { detail, checks }))
}

/// The project file's JSON Schema, for editors.
pub async fn project_schema() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/schema+json")],
        crate::project::schema::PROJECT_SCHEMA,
    )
}
