//! Liveness and readiness probes (docs/contract.md#http-routes).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::state::AppState;

/// How long `/readyz` waits for the database before calling it not ready.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /healthz`: the process runs and serves HTTP.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when the database answers `SELECT 1` in time, else 503,
/// so a load balancer stops sending traffic to a replica that cannot serve.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let ping = sqlx::query("SELECT 1").execute(&state.pool);
    match tokio::time::timeout(READY_TIMEOUT, ping).await {
        Ok(Ok(_)) => (StatusCode::OK, Json(json!({ "status": "ready" }))),
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness: database query failed");
            not_ready()
        }
        Err(_) => {
            tracing::warn!("readiness: database did not answer within {READY_TIMEOUT:?}");
            not_ready()
        }
    }
}

fn not_ready() -> (StatusCode, Json<Value>) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "error": "the database is not answering" })),
    )
}
