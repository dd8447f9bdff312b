//! The dashboard's stylesheet and its one script, built into the binary so
//! a deployment is one file (the CSP forbids inline script and style).

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

const REFRESH_SCRIPT: &str = include_str!("../../static/refresh.js");

/// `GET /static/refresh.js`: keeps an open page current.
pub async fn refresh_script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        REFRESH_SCRIPT,
    )
}
