//! The webhook route's answers other than 202: `{"error": "…"}` with a
//! status, and the 503 of a delivery that found no turn to be read.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::admission::Busy;

/// `{"error": message}` with `status`.
pub fn error(status: StatusCode, message: &str) -> Response {
    let body: Value = json!({ "error": message });
    (status, Json(body)).into_response()
}

/// 503 with `Retry-After`: every turn to read a body stayed taken.
pub fn busy(busy: Busy) -> Response {
    let mut answer = error(StatusCode::SERVICE_UNAVAILABLE, &busy.to_string());
    answer.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(busy.retry_after.as_secs()),
    );
    answer
}
