//! `GET /metrics`: the Prometheus exposition (docs/operations.md#metrics).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;

use super::state::AppState;
use crate::registry;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Refreshes `roster_repos` and `roster_holds` from the database, then
/// encodes every metric.
/// A database failure keeps the last counts: the other metrics still help.
pub async fn metrics(State(state): State<AppState>) -> Response {
    match registry::status_counts(&state.pool).await {
        Ok(counts) => state.metrics.set_repo_counts(&counts),
        Err(error) => tracing::warn!(%error, "metrics: cannot count repositories per status"),
    }
    match registry::active_hold_count(&state.pool).await {
        Ok(holds) => state.metrics.set_active_holds(holds),
        Err(error) => tracing::warn!(%error, "metrics: cannot count active holds"),
    }
    let mut body = String::new();
    if let Err(error) = encode(&mut body, &state.registry) {
        tracing::error!(%error, "metrics: encoding failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}
