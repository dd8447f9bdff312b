//! The resync forms of signed-in operators. They do what the write API
//! does (SPEC §5: enqueue a repository, request a listing) and answer with
//! a redirect back to the page, so a reload never sends them twice.

use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Redirect;
use axum::Form;
use serde::Deserialize;

use super::PageError;
use crate::web::api_write;
use crate::web::error::ApiError;
use crate::web::extract::ApiPath;
use crate::web::origin::same_origin;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::repo_href;

/// The body of a form that acts: this session's CSRF token.
#[derive(Debug, Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    pub csrf: String,
}

/// Lets a form through only when it comes from a page of this server
/// (`Origin`/`Referer`; see [`same_origin`] for `trust_proxy`), the browser
/// is signed in, and the form carries the session's CSRF token. The session
/// cookie is also `SameSite=Strict`.
pub fn check_action(
    headers: &HeaderMap,
    trust_proxy: bool,
    viewer: &Viewer,
    csrf: &str,
) -> Result<(), PageError> {
    if !same_origin(headers, trust_proxy) {
        return Err(PageError::forbidden(
            "cross-site request refused: send the form from this dashboard",
        ));
    }
    let session = viewer
        .session
        .as_ref()
        .ok_or_else(PageError::sign_in_first)?;
    if !session.csrf_matches(csrf) {
        return Err(PageError::forbidden(
            "the form is not from this session (it may be older than the sign-in): reload the page and try again",
        ));
    }
    Ok(())
}

/// `POST /resync`: "Resync all", an org-wide listing as soon as possible.
pub async fn resync_all(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    form: Result<Form<ActionForm>, FormRejection>,
) -> Result<Redirect, PageError> {
    let csrf = form.map(|Form(f)| f.csrf).unwrap_or_default();
    check_action(&headers, state.trust_proxy, &viewer, &csrf)?;
    api_write::schedule_listing(&state, "from the dashboard").await?;
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
    api_write::enqueue_repo(&state, &owner, &name, "from the dashboard").await?;
    Ok(Redirect::to(&format!(
        "{}?done=resync",
        repo_href(&format!("{owner}/{name}"))
    )))
}
