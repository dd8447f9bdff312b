//! The dashboard: server-rendered pages for people (docs/contract.md#http-routes), from the same
//! registry queries as the API. Templates live in `templates/`; askama
//! escapes every value, and repository data is never marked safe.
//!
//! Every page works without JavaScript; `/static/refresh.js` only keeps an
//! open page current. Signed-in operators (see [`crate::web::session`]) get
//! resync forms, each guarded against cross-site requests.

mod action;
mod change_row;
mod change_stream;
mod chrome;
mod deliveries;
mod error_page;
mod forms;
mod history;
mod overview;
mod owners;
mod projects;
mod repo;
mod script;
mod signin;

use axum::http::{header, HeaderValue};
use axum::routing::{get, post};
use axum::Router;
use tower_http::set_header::SetResponseHeaderLayer;

use super::state::AppState;

/// Every dashboard route: the pages, the sign-in and resync forms, and the
/// refresh script.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(overview::overview))
        .route("/repos/{owner}/{name}", get(repo::repo_detail))
        .route("/repos/{owner}/{name}/resync", post(forms::resync_repo))
        .route("/resync", post(forms::resync_all))
        .route("/projects", get(projects::projects))
        .route("/projects/{name}/history", get(history::entry_history))
        .route("/owners", get(owners::owners))
        .route("/changes", get(history::changes_page))
        .route("/deliveries", get(deliveries::deliveries))
        .route("/signin", get(signin::form).post(signin::sign_in))
        .route("/signout", post(signin::sign_out))
        .route("/static/refresh.js", get(script::refresh_script))
        // Pages hold the session's CSRF token and change every few seconds:
        // no cache keeps them (the script sets its own caching).
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}
