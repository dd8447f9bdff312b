//! `GET /deliveries`: recent webhook deliveries, newest first, optionally
//! those of one repository (`?repo=owner/name`).

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use chrono::Utc;

use super::chrome::Chrome;
use super::error_page::PageError;
use crate::web::delivery_log;
use crate::web::error::ApiError;
use crate::web::extract::ApiQuery;
use crate::web::params::DeliveryParams;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::{href_with, DeliveryView};

#[derive(Template, WebTemplate)]
#[template(path = "deliveries.html")]
pub struct DeliveriesTemplate {
    chrome: Chrome,
    /// The repository filter, echoed back.
    repo: String,
    rows: Vec<DeliveryView>,
    paged: bool,
    first_href: String,
    next_href: Option<String>,
}

pub async fn deliveries(
    State(state): State<AppState>,
    viewer: Viewer,
    params: Result<ApiQuery<DeliveryParams>, ApiError>,
) -> Result<DeliveriesTemplate, PageError> {
    // A malformed query string shows as a page, not as the API's JSON.
    let ApiQuery(params) = params?;
    let page =
        delivery_log::page(&state.pool, params.limit()?, params.cursor(), params.repo()).await?;
    let now = Utc::now();
    let next_href = page.next_cursor.as_deref().map(|cursor| {
        href_with(
            "/deliveries",
            &[("repo", params.repo()), ("cursor", Some(cursor))],
        )
    });
    Ok(DeliveriesTemplate {
        chrome: Chrome::for_viewer(viewer),
        repo: params.repo().unwrap_or_default().to_owned(),
        rows: page
            .items
            .into_iter()
            .map(|d| DeliveryView::new(d, now))
            .collect(),
        paged: params.cursor().is_some(),
        first_href: href_with("/deliveries", &[("repo", params.repo())]),
        next_href,
    })
}
