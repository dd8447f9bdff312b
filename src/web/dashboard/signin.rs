//! Signing in and out of the dashboard with the API token.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::header::{RETRY_AFTER, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use chrono::Utc;
use serde::Deserialize;
use std::time::Instant;

use super::action::{check_action, ActionForm};
use super::chrome::Chrome;
use super::error_page::PageError;
use crate::web::auth::tokens_match;
use crate::web::error::{retry_after, ApiError};
use crate::web::origin::{over_https, same_origin};
use crate::web::revocation;
use crate::web::session::{clear_cookie, session_cookie, SessionKey, Viewer};
use crate::web::state::AppState;
use crate::web::throttle::Attempt;
use crate::web::throttle_key::Client;

#[derive(Template, WebTemplate)]
#[template(path = "signin.html")]
pub struct SignInTemplate {
    chrome: Chrome,
    /// Where to go after signing in (a path on this server).
    next: String,
    /// Why the last attempt failed, or why signing in is off.
    problem: Option<&'static str>,
    /// A token is configured, so the form is shown.
    enabled: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct NextParam {
    next: Option<String>,
    /// The token itself, from the link a local trial prints at start
    /// (`/signin?token=…`): signs in as the form does.
    token: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

/// `GET /signin`: the form, or with `?token=` the sign-in itself.
pub async fn form(
    State(state): State<AppState>,
    viewer: Viewer,
    Client(client): Client,
    headers: HeaderMap,
    Query(params): Query<NextParam>,
) -> Response {
    if let (Some(token), Some(expected)) = (params.token.as_deref(), state.api_token.as_ref()) {
        let next = local_path(params.next.as_deref()).to_owned();
        return attempt(&state, client, &headers, token, expected, next);
    }
    let problem = state
        .api_token
        .is_none()
        .then_some("Signing in is off: the server has no API token configured (ROSTER_API_TOKEN).");
    let status = if problem.is_some() {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    let page = SignInTemplate {
        chrome: Chrome::for_viewer(viewer),
        next: local_path(params.next.as_deref()).to_owned(),
        problem,
        enabled: state.api_token.is_some(),
    };
    (status, page).into_response()
}

/// `POST /signin`: with the right token, a session cookie and a redirect
/// to `next`; otherwise the form again with a 401, or a 429 while the
/// client is locked out (see [`crate::web::throttle`], shared with the
/// write API).
pub async fn sign_in(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Result<Response, PageError> {
    // A login form posted from another site could sign a browser in
    // without its owner knowing.
    if !same_origin(&headers, state.trust_proxy) {
        return Err(PageError::forbidden(
            "cross-site request refused: send the form from this dashboard",
        ));
    }
    let Some(expected) = state.api_token.as_ref() else {
        return Err(PageError::forbidden(
            "signing in is off: the server has no API token configured",
        ));
    };
    let Form(form) = form.unwrap_or(Form(SignInForm {
        token: String::new(),
        next: String::new(),
    }));
    let next = local_path(Some(&form.next)).to_owned();
    Ok(attempt(
        &state,
        client,
        &headers,
        &form.token,
        expected,
        next,
    ))
}

/// One try of `token`: a session cookie and a redirect to `next`, or the
/// form again with a 401, or a 429 while the client is locked out.
fn attempt(
    state: &AppState,
    client: crate::web::throttle_key::ClientKey,
    headers: &HeaderMap,
    token: &str,
    expected: &secrecy::SecretString,
    next: String,
) -> Response {
    let refused = |problem| SignInTemplate {
        chrome: Chrome::for_viewer(Viewer {
            session: None,
            can_sign_in: true,
        }),
        next: next.clone(),
        problem: Some(problem),
        enabled: true,
    };
    let attempt = state.auth_throttle.attempt(client, Instant::now(), || {
        tokens_match(token.trim(), expected)
    });
    match attempt {
        Attempt::Right => {}
        Attempt::Wrong { locked } => {
            if locked {
                tracing::warn!(
                    %client,
                    "dashboard sign-in: too many wrong tokens from this client, locked out of the API and sign-in"
                );
            } else {
                tracing::warn!(%client, "dashboard sign-in refused: wrong token");
            }
            let page = refused("That is not the API token.");
            return (StatusCode::UNAUTHORIZED, page).into_response();
        }
        Attempt::Locked { wait } => {
            tracing::debug!(%client, "dashboard sign-in refused: the client is locked out");
            let page = refused("Too many wrong tokens from this address: wait a few minutes.");
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(RETRY_AFTER, retry_after(wait).to_string())],
                page,
            )
                .into_response();
        }
    }
    let cookie = SessionKey::from_token(expected).issue(Utc::now());
    tracing::info!("dashboard sign-in");
    let target = with_done(&next, "signed-in");
    let secure = over_https(headers, state.trust_proxy);
    (
        [(SET_COOKIE, session_cookie(&cookie, secure))],
        Redirect::to(&target),
    )
        .into_response()
}

/// `POST /signout`: ends the session on the server, so the cookie stops
/// working even where a copy of it survives, and clears it in the browser.
/// Guarded like the other forms so a foreign page cannot sign an operator
/// out.
pub async fn sign_out(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    form: Result<Form<ActionForm>, FormRejection>,
) -> Result<Response, PageError> {
    let csrf = form.map(|Form(f)| f.csrf).unwrap_or_default();
    check_action(&headers, state.trust_proxy, &viewer, &csrf)?;
    let Some(session) = viewer.session else {
        return Err(PageError::sign_in_first());
    };
    // Saying "signed out" while the cookie still worked would be a lie:
    // without the record, the operator is told to try again.
    revocation::revoke(&state.pool, &session.id, session.expires_at)
        .await
        .map_err(|error| {
            ApiError::unavailable("sign-out: cannot record the session's end", &error)
        })?;
    tracing::info!("dashboard sign-out");
    Ok((
        [(SET_COOKIE, clear_cookie())],
        Redirect::to("/?done=signed-out"),
    )
        .into_response())
}

/// `next` when it is a path on this server (no scheme, no `//host`, no
/// backslash tricks), else `/`: the form must not become an open redirect.
fn local_path(next: Option<&str>) -> &str {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.chars().any(char::is_control) =>
        {
            path
        }
        _ => "/",
    }
}

/// `path` with `done=what` added to its query.
fn with_done(path: &str, what: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{path}{separator}done={what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_should_only_be_a_local_path() {
        assert_eq!(local_path(Some("/repos/a/b")), "/repos/a/b");
        assert_eq!(local_path(Some("/?status=error")), "/?status=error");
        for bad in [
            "https://evil.example/",
            "//evil.example",
            "/\\evil.example",
            "javascript:alert(1)",
            "",
            "/\nx",
        ] {
            assert_eq!(local_path(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn done_should_join_an_existing_query() {
        assert_eq!(with_done("/", "signed-in"), "/?done=signed-in");
        assert_eq!(
            with_done("/?status=error", "signed-in"),
            "/?status=error&done=signed-in"
        );
    }
}
