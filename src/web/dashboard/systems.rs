//! `GET /systems`: the systems of the registry (docs/contract.md#relations),
//! each with its projects and their owners, read like `/api/v1/systems`
//! and under the same reading rule, at most 1 MiB a page.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use super::chrome::Chrome;
use super::error_page::PageError;
use crate::registry::budget::ITEMS_BUDGET;
use crate::registry::read_models::relations::{self, system_cursor};
use crate::web::error::ApiError;
use crate::web::extract::ApiQuery;
use crate::web::html_budget::{escaped_len, keep_rows};
use crate::web::json::SystemJson;
use crate::web::params::SystemParams;
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::href_with;

#[derive(Template, WebTemplate)]
#[template(path = "systems.html")]
pub struct SystemsTemplate {
    chrome: Chrome,
    systems: Vec<SystemJson>,
    paged: bool,
    first_href: String,
    next_href: Option<String>,
}

impl SystemsTemplate {
    /// The projects of `system` not listed.
    fn more(&self, system: &SystemJson) -> usize {
        system.project_count.saturating_sub(system.projects.len())
    }
}

/// Bytes of a system's row once escaped, with its links.
fn html_len(system: &SystemJson) -> usize {
    let projects: usize = system
        .projects
        .iter()
        .map(|p| 2 * escaped_len(p) + 40)
        .sum();
    let owners: usize = system
        .owners
        .iter()
        .map(|o| 2 * escaped_len(&o.owner) + 80)
        .sum();
    escaped_len(&system.name) + projects + owners
}

/// Takes the `limit` and `cursor` of `/api/v1/systems`.
pub async fn systems_page(
    State(state): State<AppState>,
    viewer: Viewer,
    params: Result<ApiQuery<SystemParams>, ApiError>,
) -> Result<SystemsTemplate, PageError> {
    let ApiQuery(params) = params?;
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let page = relations::systems(&state.pool, params.limit()?, params.cursor()).await?;
    let mut systems: Vec<SystemJson> = page
        .items
        .into_iter()
        .map(|s| SystemJson::new(s, &privacy))
        .collect();
    let cursor = if keep_rows(&mut systems, ITEMS_BUDGET, html_len) {
        systems.last().map(|s| system_cursor(&s.name))
    } else {
        page.next_cursor
    };
    let limit = params.limit.clone().filter(|l| !l.is_empty());
    Ok(SystemsTemplate {
        chrome: Chrome::for_viewer(viewer),
        systems,
        paged: params.cursor().is_some(),
        first_href: href_with("/systems", &[("limit", limit.as_deref())]),
        next_href: cursor.map(|cursor| {
            href_with(
                "/systems",
                &[
                    ("limit", limit.as_deref()),
                    ("cursor", Some(cursor.as_str())),
                ],
            )
        }),
    })
}
