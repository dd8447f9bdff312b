//! The dashboard's stylesheet, built into the binary so a deployment is
//! one file.

use axum::http::header;
use axum::response::IntoResponse;

const STYLESHEET: &str = include_str!("../../static/roster.css");

/// `GET /static/roster.css`.
pub async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        STYLESHEET,
    )
}
