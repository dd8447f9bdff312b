//! Errors of the dashboard pages, shown as a page rather than JSON.

use askama::Template;
use askama_web::WebTemplate;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::chrome::Chrome;
use crate::registry::RegistryError;
use crate::web::error::ApiError;

#[derive(Template, WebTemplate)]
#[template(path = "error.html")]
struct ErrorTemplate {
    chrome: Chrome,
    status: u16,
    reason: &'static str,
    message: String,
    /// Offer the sign-in page (the request needed a session).
    sign_in: bool,
}

/// A failed page: the API's causes and status codes, and the refusals of
/// the dashboard's forms.
#[derive(Debug)]
pub struct PageError {
    status: StatusCode,
    message: String,
    sign_in: bool,
}

impl PageError {
    /// A refused form (403): cross-site, or without this session's token.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
            sign_in: false,
        }
    }

    /// A form that needs a session sent without one (401).
    pub fn sign_in_first() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            message: "sign in with the API token first".to_owned(),
            sign_in: true,
        }
    }
}

impl From<ApiError> for PageError {
    fn from(error: ApiError) -> Self {
        Self {
            status: error.status(),
            message: error.to_string(),
            sign_in: false,
        }
    }
}

impl From<RegistryError> for PageError {
    fn from(error: RegistryError) -> Self {
        ApiError::from(error).into()
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let page = ErrorTemplate {
            chrome: Chrome::default(),
            status: self.status.as_u16(),
            reason: self.status.canonical_reason().unwrap_or("Error"),
            message: self.message,
            sign_in: self.sign_in,
        };
        (self.status, page).into_response()
    }
}
