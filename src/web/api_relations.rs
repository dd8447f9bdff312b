//! `GET /api/v1/graph` and `GET /api/v1/systems` (docs/contract.md#relations):
//! what depends on what, and the systems projects make up, under the same
//! reading rule as `/api/v1/projects`.

use axum::extract::State;
use axum::Json;

use super::error::{ApiError, BadParameter, ErrorJson};
use super::extract::ApiQuery;
use super::json::{GraphJson, PageJson, SystemJson};
use super::params::{GraphParams, SystemParams};
use super::privacy::Privacy;
use super::state::AppState;
use crate::registry::budget;
use crate::registry::read_models::relations::{self, system_cursor, MAX_GRAPH_NODES};

/// The neighbourhood of `root`, `depth` steps each way (what it depends
/// on, and what depends on it), or the whole registry without `root`; at
/// most 1 MiB, then `truncated`. A few are read at once
/// ([`crate::web::graph_reads`]); past them, 503 at once.
#[utoipa::path(get, path = "/api/v1/graph", operation_id = "get_graph",
    tag = "relations", security((), ("token" = [])), params(GraphParams),
    responses((status = 200, description = "Nodes and the edges between them", body = GraphJson),
              (status = 400, description = "A bad root or depth", body = ErrorJson),
              (status = 404, description = "No project is called root", body = ErrorJson),
              (status = 503, description = "Too many graph reads at once; see Retry-After",
               body = ErrorJson)))]
pub async fn graph(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<GraphParams>,
) -> Result<Json<GraphJson>, ApiError> {
    let depth = params.depth()?;
    let root = params.root()?;
    let _place = state.graph_reads.try_start().ok_or(ApiError::Busy {
        what: "graph reads",
        wait: GRAPH_RETRY_AFTER,
    })?;
    let graph = match root {
        Some(root) => relations::neighbourhood(&state.pool, root.as_str(), depth, MAX_GRAPH_NODES)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("root: no project {}", root.as_str())))?,
        None => relations::whole_registry(&state.pool, MAX_GRAPH_NODES).await?,
    };
    Ok(Json(GraphJson::fit(&graph, &privacy)))
}

/// What a refused graph read's `Retry-After` says: a graph takes well
/// under a second to read.
const GRAPH_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// The systems, by name: each with its projects and their owners.
#[utoipa::path(get, path = "/api/v1/systems", operation_id = "list_systems",
    tag = "relations", security((), ("token" = [])), params(SystemParams),
    responses((status = 200, description = "A page of systems", body = PageJson<SystemJson>),
              BadParameter))]
pub async fn systems(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<SystemParams>,
) -> Result<Json<PageJson<SystemJson>>, ApiError> {
    let page = relations::systems(&state.pool, params.limit()?, params.cursor()).await?;
    let mut items: Vec<SystemJson> = page
        .items
        .into_iter()
        .map(|s| SystemJson::new(s, &privacy))
        .collect();
    let next_cursor = if budget::fit_json(&mut items) {
        items.last().map(|s| system_cursor(&s.name))
    } else {
        page.next_cursor
    };
    Ok(Json(PageJson { items, next_cursor }))
}
