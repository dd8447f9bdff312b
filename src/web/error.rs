//! The API's errors: every one answers `{"error": "…"}` with a fitting
//! status (docs/contract.md#http-routes). Internal details are logged, never sent.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::registry::RegistryError;

/// What went wrong with an API request, as the client should see it.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request itself is wrong (a parameter, the query string).
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    /// No bearer token, or the wrong one.
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// The client presented too many wrong tokens (docs/contract.md#bounds); it may try
    /// again after `wait`.
    #[error("too many wrong tokens from this client: try again in {} s", retry_after(*.wait))]
    TooManyTries { wait: std::time::Duration },
    /// The write API is off because no token is configured.
    #[error("the write API is disabled: no API token is configured")]
    Forbidden,
    /// A bounded kind of work has no room now (docs/contract.md#bounds): 503
    /// with `Retry-After`, answered at once.
    #[error("too many {what} at once: try again in {} s", retry_after(*.wait))]
    Busy {
        what: &'static str,
        wait: std::time::Duration,
    },
    /// The database (or another backing store) failed; the detail is logged.
    #[error("the database is unavailable, try again later")]
    Unavailable,
    /// A bug (a stored value the code does not expect); the detail is logged.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// Logs `detail` and answers 503: the client learns nothing internal.
    pub fn unavailable(context: &str, detail: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "{context}");
        Self::Unavailable
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::TooManyTries { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::Unavailable | Self::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> Self {
        match error {
            RegistryError::BadCursor => {
                Self::BadRequest("cursor: not a cursor this list handed out".to_owned())
            }
            RegistryError::Database(detail) => Self::unavailable("registry query failed", &detail),
            RegistryError::TooLong { what } => {
                tracing::warn!(what, "a read ran past its time and was cancelled");
                Self::Busy {
                    what,
                    wait: std::time::Duration::from_secs(1),
                }
            }
            other => Self::unavailable("registry query failed", &other),
        }
    }
}

/// Every error's body: what went wrong, in a sentence.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorJson {
    pub error: String,
}

/// A list route's answer to a bad query parameter, for the OpenAPI
/// document: declared once rather than in each route's annotation.
#[derive(utoipa::IntoResponses)]
#[response(status = 400, description = "A bad parameter")]
pub struct BadParameter(pub ErrorJson);

/// A write route's refusals, for the OpenAPI document: what every route
/// behind the bearer token may answer before it looks at the request.
#[derive(utoipa::IntoResponses)]
pub enum WriteRefused {
    #[response(status = 401, description = "No token, or a wrong one")]
    WrongToken(ErrorJson),
    #[response(status = 403, description = "No token is configured")]
    NoTokenConfigured(ErrorJson),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorJson {
            error: self.to_string(),
        };
        let mut response = (self.status(), Json(body)).into_response();
        match self {
            Self::Unauthorized => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::TooManyTries { wait } | Self::Busy { wait, .. } => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after(wait)));
            }
            _ => {}
        }
        response
    }
}

/// A wait as the whole seconds of `Retry-After`, rounded up, at least 1:
/// a client that comes back after it is no longer locked.
pub fn retry_after(wait: std::time::Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

/// The 404 of a repository the registry does not know, the same from the
/// API and the dashboard.
pub fn repo_not_found(owner: &str, name: &str) -> ApiError {
    ApiError::NotFound(format!("repository {owner}/{name} not found"))
}

/// Answers routes that do not exist with the same JSON shape.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}
