//! What every route shares, and the router that wires the routes together.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use prometheus_client::registry::Registry;
use secrecy::SecretString;
use sqlx::PgPool;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::throttle::FailureThrottle;
use super::{
    api_deliveries, api_projects, api_repos, api_write, assets, dashboard, error, health,
    metrics_route,
};
use crate::db::queue::PgQueue;
use crate::metrics::Metrics;

/// A request taking longer than this is cut off with a 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest request body the API and dashboard accept; none of their
/// routes needs a body, so anything large is abuse.
pub const BODY_LIMIT: usize = 64 * 1024;

const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// Shared by every handler; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub metrics: Arc<Metrics>,
    /// Everything `/metrics` exposes (Roster's and the controller's metrics).
    pub registry: Arc<Registry>,
    /// The write API's bearer token; `None` turns the write API off (403).
    pub api_token: Option<SecretString>,
    /// Base of links to repositories, e.g. `https://github.com`; `None` for
    /// sources without a web page (the local folder).
    pub github_web_url: Option<String>,
    /// Path of the project file inside a repository (`ROSTER_PROJECT_FILE`),
    /// for the dashboard's link to it.
    pub project_file: String,
    /// Period of the org-wide listing (`ROSTER_RESYNC_INTERVAL`), for the
    /// dashboard's "next listing due".
    pub resync_interval: Duration,
    /// Wrong tokens per client, at the write API and the sign-in form alike.
    pub auth_throttle: Arc<FailureThrottle>,
    /// Whether `X-Forwarded-*` headers describe the client
    /// (`ROSTER_TRUST_PROXY`); see [`crate::web::forwarded`].
    pub trust_proxy: bool,
}

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
        .route("/api/v1/deliveries", get(api_deliveries::list))
        .route("/api/v1/holds", get(super::api_holds::list))
        .route(
            "/api/v1/holds/{id}/release",
            post(super::api_holds::release),
        )
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
