//! The router that wires every route of the API, the dashboard, the probes
//! and `/metrics` together, under one timeout and the security headers.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::state::AppState;
use super::{
    api_deliveries, api_holds, api_owners, api_projects, api_repos, api_write, assets, dashboard,
    error, health, metrics_route,
};

/// A request taking longer than this is cut off with a 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest request body the API and dashboard accept; none of their
/// routes needs a body, so anything large is abuse.
pub const BODY_LIMIT: usize = 64 * 1024;

const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// Every route of the API, the dashboard, the probes and `/metrics`, with a
/// request timeout, a small body limit and security headers.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// Like [`router`], merging `extra` (the webhook route, which sets its own
/// body limit) under the same timeout and security headers.
pub fn router_with(state: AppState, extra: Router) -> Router {
    let routes = Router::new()
        .merge(dashboard::routes())
        .route("/static/roster.css", get(assets::stylesheet))
        .route("/api/v1/repos", get(api_repos::list))
        .route("/api/v1/repos/{owner}/{name}", get(api_repos::detail))
        .route("/schema/project.json", get(api_repos::project_schema))
        .route(
            "/api/v1/repos/{owner}/{name}/resync",
            post(api_write::resync_repo),
        )
        .route("/api/v1/resync", post(api_write::resync_all))
        .route("/api/v1/projects", get(api_projects::list))
        .route("/api/v1/projects/{name}", get(api_projects::detail))
        .route(
            "/api/v1/projects/{name}/history",
            get(super::api_changes::history),
        )
        .route("/api/v1/notify", get(super::api_changes::notify_targets))
        .route("/api/v1/deliveries", get(api_deliveries::list))
        .route("/api/v1/holds", get(api_holds::list))
        .route("/api/v1/owners", get(api_owners::list))
        .route("/api/v1/holds/{id}/release", post(api_holds::release))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics_route::metrics))
        .fallback(error::not_found)
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .with_state(state);
    routes
        .merge(extra)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .layer(security_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(security_header(header::REFERRER_POLICY, "same-origin"))
        .layer(security_header(
            header::CONTENT_SECURITY_POLICY,
            CONTENT_SECURITY_POLICY,
        ))
        .layer(TraceLayer::new_for_http())
}

fn security_header(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
}
