//! `GET /static/refresh.js`: keeps an open page current. Served from the
//! binary as a file (the CSP forbids inline script).

use axum::http::header;
use axum::response::IntoResponse;

const REFRESH_SCRIPT: &str = include_str!("../../../static/refresh.js");

pub async fn refresh_script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        REFRESH_SCRIPT,
    )
}
