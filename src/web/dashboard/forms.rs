//! The resync forms of signed-in operators. They do what the write API
//! does (docs/contract.md#http-routes: enqueue a repository, request a listing) and answer with
//! a redirect back to the page, so a reload never sends them twice.

use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Redirect;
use axum::Form;

use super::action::{check_action, ActionForm};
use super::error_page::PageError;
use crate::web::error::ApiError;
use crate::web::extract::ApiPath;
use crate::web::resync;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::repo_href;

/// `POST /resync`: "Resync all", an org-wide listing as soon as possible.
pub async fn resync_all(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    form: Result<Form<ActionForm>, FormRejection>,
) -> Result<Redirect, PageError> {
    let csrf = form.map(|Form(f)| f.csrf).unwrap_or_default();
    check_action(&headers, state.trust_proxy, &viewer, &csrf)?;
    resync::schedule_listing(&state, "from the dashboard").await?;
    Ok(Redirect::to("/?done=resync-all"))
}

/// `POST /repos/{owner}/{name}/resync`: "Resync", that repository afresh.
pub async fn resync_repo(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    path: Result<ApiPath<(String, String)>, ApiError>,
    form: Result<Form<ActionForm>, FormRejection>,
) -> Result<Redirect, PageError> {
    let csrf = form.map(|Form(f)| f.csrf).unwrap_or_default();
    check_action(&headers, state.trust_proxy, &viewer, &csrf)?;
    let ApiPath((owner, name)) = path?;
    resync::enqueue_repo(&state, &owner, &name, "from the dashboard").await?;
    Ok(Redirect::to(&format!(
        "{}?done=resync",
        repo_href(&format!("{owner}/{name}"))
    )))
}
