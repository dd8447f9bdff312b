//! `GET /api/v1/repos` and `GET /api/v1/repos/{owner}/{name}` (SPEC §5).

use axum::extract::State;
use axum::Json;

use super::error::{repo_not_found, ApiError};
use super::extract::{ApiPath, ApiQuery};
use super::params::RepoParams;
use super::state::AppState;
use crate::registry::{self, Page, RepoDetailJson, RepoJson};

/// Repositories with their status, filtered by `status` and `q`, paginated.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<RepoParams>,
) -> Result<Json<Page<RepoJson>>, ApiError> {
    let filter = params.to_filter()?;
    Ok(Json(registry::list_repos(&state.pool, &filter).await?))
}

/// One repository, its entries and its recent events.
pub async fn detail(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> Result<Json<RepoDetailJson>, ApiError> {
    registry::get_repo(&state.pool, &owner, &name)
        .await?
        .map(Json)
        .ok_or_else(|| repo_not_found(&owner, &name))
}
