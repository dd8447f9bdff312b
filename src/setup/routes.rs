//! The handlers of setup mode: readiness, the setup page, the manifest form
//! and GitHub's callback (their paths are declared in `web::router`, with
//! `/healthz` and the stylesheet). Everything else answers 503: Roster has
//! no App yet.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::Deserialize;
use sqlx::PgPool;
use tokio::sync::Notify;
use url::Url;

use super::conversion::{self, ExchangeError, Expected};
use super::key::{random_hex, SecretKey};
use super::manifest::{check_org, manifest_json, PublicUrl};
use super::pages::{page, problem, GithubPage, SetupPage};
use super::state;
use super::store::{self, StateUse};

/// What the setup routes share.
#[derive(Clone)]
pub struct SetupState {
    pub pool: PgPool,
    pub key: SecretKey,
    /// GitHub's web address (the new-App page) and REST base (the exchange).
    pub github_url: Url,
    pub api_url: Url,
    /// `ROSTER_PUBLIC_URL`: when set, the address the manifest carries,
    /// whatever host the page was opened on or the form sent.
    pub public_url: Option<PublicUrl>,
    /// Told once this replica has stored the App.
    pub stored: Arc<Notify>,
    /// Counts wrong setup tokens per client.
    pub gate: Arc<dyn TokenGate>,
}

/// Wrong setup tokens counted per client and locked out like the sign-in
/// form's (docs/contract.md#bounds): implemented where the failure
/// throttle lives, which this module cannot import.
pub trait TokenGate: Send + Sync {
    /// Counts a token from the request of `parts`, wrong unless `valid`;
    /// `Err(wait)` when its client is locked out for `wait`.
    fn attempt(&self, parts: &Parts, valid: bool) -> Result<(), Duration>;
}

impl SetupState {
    /// GitHub's origin, the one place the manifest form may post to.
    fn github_origin(&self) -> String {
        self.github_url.origin().ascii_serialization()
    }
}

const RESTART_HINT: &str = "Start again from the setup address in Roster's log.";

/// `GET /readyz`: ready once the database answers.
pub async fn readyz(State(state): State<SetupState>) -> Response {
    let ping = sqlx::query("select 1").execute(&state.pool);
    match tokio::time::timeout(Duration::from_secs(2), ping).await {
        Ok(Ok(_)) => Json(serde_json::json!({ "status": "ready" })).into_response(),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({ "error": "the database is not answering" })),
        )
            .into_response(),
    }
}

const NO_APP_YET: &str = "Roster has no GitHub App yet: open the setup address printed in its log.";

/// Any other path: 503, Roster has no App yet. Under `/api/`, the API's
/// usual `{"error": "…"}`, so a script reads it as it reads any other
/// error; elsewhere a line of text.
pub async fn waiting(uri: Uri) -> Response {
    let retry = [(header::RETRY_AFTER, "60")];
    if uri.path().starts_with("/api/") {
        let body = Json(serde_json::json!({ "error": NO_APP_YET }));
        return (StatusCode::SERVICE_UNAVAILABLE, retry, body).into_response();
    }
    let body = format!("{NO_APP_YET}\n");
    (StatusCode::SERVICE_UNAVAILABLE, retry, body).into_response()
}

/// 404 once an App is stored; a 503 page when the database cannot say.
async fn closed(pool: &PgPool) -> Option<Response> {
    match store::app_exists(pool).await {
        Ok(false) => None,
        Ok(true) => Some(problem(
            StatusCode::NOT_FOUND,
            "Roster is set up: its GitHub App is registered.",
            "Change the App's settings on GitHub.",
        )),
        Err(e) => Some(database_down(&e)),
    }
}

fn database_down(e: &sqlx::Error) -> Response {
    tracing::warn!(error = %e, "setup: database error");
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "The database is not answering.",
        "Try again in a moment.",
    )
}

/// Whether `token` opens setup; a 403 (a missing, wrong or retired
/// token), 429 (too many wrong ones from this client) or 503 answer when
/// not.
async fn check_token(state: &SetupState, parts: &Parts, token: Option<&str>) -> Option<Response> {
    let refused = |message: &str| {
        Some(problem(
            StatusCode::FORBIDDEN,
            message,
            "Open the setup address the last setup page gave you, or the one Roster's log prints last (a replica started after it was used prints a fresh one).",
        ))
    };
    let token = token.filter(|t| !t.is_empty());
    let valid = match token {
        None => false,
        Some(token) => match store::token_valid(&state.pool, token).await {
            Ok(valid) => valid,
            Err(e) => return Some(database_down(&e)),
        },
    };
    if let Err(wait) = state.gate.attempt(parts, valid) {
        tracing::warn!("setup: too many wrong tokens from one client, locked out");
        let mut answer = problem(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many wrong setup tokens from this address.",
            "Wait, then open the setup address exactly as Roster's log prints it last.",
        );
        answer.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
        return Some(answer);
    }
    match (token, valid) {
        (_, true) => None,
        (None, false) => refused("The setup address needs its token."),
        (Some(_), false) => refused(NOT_VALID),
    }
}

/// Why a token is refused: a wrong one reads the same as a spent one.
const NOT_VALID: &str = "This setup token is not valid: it was used, or it was never issued.";

/// The answer to a token used up by another request meanwhile.
fn used_up() -> Response {
    problem(
        StatusCode::FORBIDDEN,
        NOT_VALID,
        "Open the setup address exactly as Roster's log prints it last.",
    )
}

#[derive(Deserialize)]
/// `?token=`: the setup token from the log (retired by a restart or once an
/// App is stored).
pub struct TokenQuery {
    token: Option<String>,
}

/// `GET /setup?token=…`: the form.
pub async fn show(
    State(state): State<SetupState>,
    parts: Parts,
    Query(query): Query<TokenQuery>,
) -> Response {
    if let Some(answer) = closed(&state.pool).await {
        return answer;
    }
    if let Some(answer) = check_token(&state, &parts, query.token.as_deref()).await {
        return answer;
    }
    let form = SetupPage {
        token: query.token.unwrap_or_default(),
        org: String::new(),
        public_url: state
            .public_url
            .as_ref()
            .map(|u| u.base().to_owned())
            .unwrap_or_default(),
        fixed: state.public_url.is_some(),
        problem: None,
    };
    page(StatusCode::OK, &form, "")
}

#[derive(Deserialize)]
/// The setup page's form.
pub struct SetupForm {
    token: Option<String>,
    #[serde(default)]
    org: String,
    #[serde(default)]
    public_url: String,
}

/// `POST /setup`: the manifest form, with a fresh state.
pub async fn submit(
    State(state): State<SetupState>,
    parts: Parts,
    Form(form): Form<SetupForm>,
) -> Response {
    if let Some(answer) = closed(&state.pool).await {
        return answer;
    }
    if let Some(answer) = check_token(&state, &parts, form.token.as_deref()).await {
        return answer;
    }
    let org = form.org.trim().to_owned();
    // The setting wins over the form: the page may be opened through a
    // port-forward or an internal host, and GitHub must reach the public one.
    let checked = check_org(&org).and_then(|()| match &state.public_url {
        Some(public) => Ok(public.clone()),
        None => PublicUrl::parse(&form.public_url),
    });
    let public = match checked {
        Ok(public) => public,
        Err(message) => {
            let again = SetupPage {
                token: form.token.unwrap_or_default(),
                org,
                public_url: match &state.public_url {
                    Some(public) => public.base().to_owned(),
                    None => form.public_url,
                },
                fixed: state.public_url.is_some(),
                problem: Some(message),
            };
            return page(StatusCode::BAD_REQUEST, &again, "");
        }
    };
    let manifest = match manifest_json(&public) {
        Ok(manifest) => manifest.to_string(),
        Err(message) => {
            tracing::error!(%message, "setup: the built-in manifest is broken");
            return problem(StatusCode::INTERNAL_SERVER_ERROR, message, RESTART_HINT);
        }
    };
    // The token is used up here, and its successor goes to this browser
    // alone: the address in the log (or a browser's history) opens setup
    // no more.
    let next_token = random_hex(32);
    let used = form.token.as_deref().unwrap_or_default();
    match store::use_token(&state.pool, used, &next_token).await {
        Ok(true) => {}
        Ok(false) => return used_up(),
        Err(e) => return database_down(&e),
    }
    let (signed, nonce) = state::issue(&state.key);
    if let Err(e) = store::add_state(&state.pool, &nonce, &org, public.base()).await {
        return database_down(&e);
    }
    let base = state.github_url.as_str().trim_end_matches('/');
    let path = if org.is_empty() {
        "/settings/apps/new".to_owned()
    } else {
        format!("/organizations/{org}/settings/apps/new")
    };
    let next = GithubPage {
        action: format!("{base}{path}?state={signed}"),
        manifest,
        owner: if org.is_empty() {
            "Your personal account".to_owned()
        } else {
            format!("The organisation {org}")
        },
        public_url: public.base().to_owned(),
        again: format!("/setup?token={next_token}"),
    };
    page(StatusCode::OK, &next, &state.github_origin())
}

#[derive(Deserialize)]
/// GitHub's redirect back: the code to exchange and the state issued.
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
}

/// `GET /setup/callback?code=…&state=…`: the App, exchanged, stored and
/// started; then GitHub's page to install it.
pub async fn callback(
    State(state): State<SetupState>,
    Query(query): Query<CallbackQuery>,
) -> Response {
    if let Some(answer) = closed(&state.pool).await {
        return answer;
    }
    let bad = |message: &str| problem(StatusCode::BAD_REQUEST, message, RESTART_HINT);
    let Some(nonce) = query
        .state
        .as_deref()
        .and_then(|signed| state::verify(&state.key, signed))
    else {
        return bad("The state is wrong: this Roster did not issue it.");
    };
    let (org, public_url) = match store::take_state(&state.pool, &nonce).await {
        Ok(StateUse::Taken { org, public_url }) => (org, public_url),
        Ok(StateUse::Used) => return bad("The state was already used."),
        Ok(StateUse::Expired) => return bad("The state has expired (it is valid for one hour)."),
        Ok(StateUse::Unknown) => return bad("The state is wrong: this Roster did not issue it."),
        Err(e) => return database_down(&e),
    };
    let code = query.code.unwrap_or_default();
    let expected = Expected {
        org: &org,
        public_url: &public_url,
    };
    let app = match conversion::exchange(&state.api_url, &code, &expected).await {
        Ok(app) => app,
        Err(e) => return exchange_failed(&state.pool, &nonce, &e).await,
    };
    match store::save_app(&state.pool, &state.key, &app).await {
        Ok(true) => {}
        Ok(false) => {
            return problem(
                StatusCode::CONFLICT,
                "Another GitHub App was stored first; this one was not kept.",
                "Delete the App just created on GitHub, or use it by hand.",
            )
        }
        Err(e) => {
            tracing::error!(error = %e, "setup: cannot store the App");
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "The App could not be stored.",
                RESTART_HINT,
            );
        }
    }
    tracing::info!(app_id = app.app_id, slug = %app.slug, "setup: GitHub App registered and stored");
    state.stored.notify_one();
    let install = format!("{}/installations/new", app.html_url.trim_end_matches('/'));
    (StatusCode::SEE_OTHER, [(header::LOCATION, install)]).into_response()
}

async fn exchange_failed(pool: &PgPool, nonce: &str, error: &ExchangeError) -> Response {
    tracing::warn!(%error, "setup: the code exchange failed; nothing stored");
    if error.is_transient() {
        // The code is still good on GitHub: reloading the page retries.
        if let Err(e) = store::release_state(pool, nonce).await {
            return database_down(&e);
        }
        return problem(
            StatusCode::BAD_GATEWAY,
            error.to_string(),
            "Nothing was stored. Reload this page to try again.",
        );
    }
    problem(
        StatusCode::BAD_REQUEST,
        error.to_string(),
        "Nothing was stored. Start again from the setup address in Roster's log.",
    )
}
