//! The check every form that acts passes (the resync forms, sign-out):
//! sent from this dashboard, by a signed-in browser, with the session's
//! CSRF token.

use axum::http::HeaderMap;
use serde::Deserialize;

use super::error_page::PageError;
use crate::web::origin::same_origin;
use crate::web::session::Viewer;

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
