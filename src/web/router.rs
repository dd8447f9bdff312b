//! Every route Roster serves, declared here and nowhere else: the API, the
//! dashboard, the probes and `/metrics` under one timeout and the security
//! headers; the change feed with a longer one; the webhook route with its
//! own body limit; and the routes of setup mode.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use super::api_changes::{self, ChangesState, MAX_WAIT};
use super::dashboard::{
    deliveries, forms, history, overview, owners, project, projects, repo, signin, systems,
};
use super::state::AppState;
use super::throttle_key::client_in;
use super::{
    api_holds, api_owners, api_projects, api_relations, api_repos, api_write, assets, backstage,
    delivery_log, error, health, input_check, metrics_route, openapi,
};
use crate::intake::admission::{Admission, Sender};
use crate::intake::{self, WebhookState};
use crate::setup::{routes as setup_routes, SetupState};

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
    let trust_proxy = state.trust_proxy;
    let routes = Router::new()
        .merge(dashboard())
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
        .route("/api/v1/projects/{name}/history", get(api_changes::history))
        .route("/api/v1/graph", get(api_relations::graph))
        .route("/api/v1/systems", get(api_relations::systems))
        .route("/api/v1/notify", get(api_changes::notify_targets))
        .route("/api/v1/deliveries", get(delivery_log::list))
        .route("/api/v1/holds", get(api_holds::list))
        .route("/api/v1/owners", get(api_owners::list))
        .route("/api/v1/holds/{id}/release", post(api_holds::release))
        .route("/api/v1/backstage/entities.yaml", get(backstage::entities))
        .route("/api/v1/openapi.json", get(openapi::openapi_json))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics_route::metrics))
        // Every route's query and path text checked once, before its handler.
        .route_layer(middleware::from_fn(input_check::check))
        .fallback(error::not_found)
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .with_state(state);
    // One stack, outermost first: each `Router::layer` boxes every route
    // once more, a clone and an allocation per request (the webhook's hot
    // path pays them thousands of times a second).
    // The webhook route holds each client to its share of the turns to
    // read a body: it learns who the client is here, where the proxy
    // setting is known.
    let extra = extra.layer(axum::middleware::map_request(
        move |mut request: axum::extract::Request| async move {
            let client = client_in(request.headers(), request.extensions(), trust_proxy);
            if let Some(address) = client.address() {
                request.extensions_mut().insert(Sender(address));
            }
            request
        },
    ));
    routes.merge(extra).layer(
        ServiceBuilder::new()
            .layer(TraceLayer::new_for_http())
            .layer(security_header(
                header::CONTENT_SECURITY_POLICY,
                CONTENT_SECURITY_POLICY,
            ))
            .layer(security_header(header::REFERRER_POLICY, "same-origin"))
            .layer(security_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .layer(TimeoutLayer::with_status_code(
                StatusCode::SERVICE_UNAVAILABLE,
                REQUEST_TIMEOUT,
            )),
    )
}

/// The dashboard's pages, its sign-in and resync forms, and the refresh
/// script.
fn dashboard() -> Router<AppState> {
    Router::new()
        .route("/", get(overview::overview))
        .route("/repos/{owner}/{name}", get(repo::repo_detail))
        .route("/repos/{owner}/{name}/resync", post(forms::resync_repo))
        .route("/resync", post(forms::resync_all))
        .route("/projects", get(projects::projects))
        .route("/projects/{name}", get(project::project_page))
        .route("/projects/{name}/history", get(history::entry_history))
        .route("/systems", get(systems::systems_page))
        .route("/owners", get(owners::owners))
        .route("/changes", get(history::changes_page))
        .route("/deliveries", get(deliveries::deliveries))
        .route("/signin", get(signin::form).post(signin::sign_in))
        .route("/signout", post(signin::sign_out))
        .route("/static/refresh.js", get(assets::refresh_script))
        // Pages hold the session's CSRF token and change every few seconds:
        // no cache keeps them (the script sets its own caching).
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

/// `GET /api/v1/changes`, the feed's long poll, with a timeout above
/// [`MAX_WAIT`].
pub fn changes(state: ChangesState) -> Router {
    Router::new()
        .route("/api/v1/changes", get(api_changes::feed))
        .route_layer(middleware::from_fn(input_check::check))
        .with_state(state)
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            MAX_WAIT + Duration::from_secs(15),
        ))
        .layer(security_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(security_header(header::CACHE_CONTROL, "no-store"))
        .layer(TraceLayer::new_for_http())
}

/// `POST /webhooks/github` alone, to be merged through [`router_with`]
/// (it sets its own body limit).
pub fn webhook(state: WebhookState) -> Router {
    webhook_with_admission(state).0
}

/// Like [`webhook`], also handing out the route's [`Admission`], so that a
/// test can see when every turn to read a body is taken.
pub fn webhook_with_admission(state: WebhookState) -> (Router, Arc<Admission>) {
    let (route, admission) = intake::route::prepare(state);
    let router = Router::new()
        .route(intake::PATH, post(intake::route::receive))
        .with_state(route);
    (router, admission)
}

/// Setup mode's routes: readiness, the setup page, the manifest form and
/// GitHub's callback, the liveness probe and the stylesheet; any other
/// path answers 503 (no App yet).
pub fn setup(state: SetupState) -> Router {
    let setup = Router::new()
        .route("/readyz", get(setup_routes::readyz))
        .route("/setup", get(setup_routes::show).post(setup_routes::submit))
        .route("/setup/callback", get(setup_routes::callback))
        .fallback(setup_routes::waiting)
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .with_state(state);
    setup
        .route("/healthz", get(health::healthz))
        .route("/static/roster.css", get(assets::stylesheet))
}

fn security_header(name: HeaderName, value: &'static str) -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
}
