//! `GET /projects`: the registry as a table, filtered like `/api/v1/projects`,
//! at most 1 MiB a page.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

use super::chrome::Chrome;
use super::error_page::PageError;
use super::owner_view::{tag_links, OwnerView};
use crate::project::Fields;
use crate::registry::budget::ITEMS_BUDGET;
use crate::registry::read_models::entry_query::project_cursor;
use crate::registry::{self, Entry};
use crate::web::error::ApiError;
use crate::web::extract::ApiQuery;
use crate::web::html_budget::{escaped_len, keep_rows};
use crate::web::params::ProjectParams;
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::{href_with, repo_href};

#[derive(Template, WebTemplate)]
#[template(path = "projects.html")]
pub struct ProjectsTemplate {
    chrome: Chrome,
    q: String,
    owner: String,
    tag: String,
    rows: Vec<ProjectRow>,
    paged: bool,
    first_href: String,
    next_href: Option<String>,
}

impl ProjectsTemplate {
    fn filtered(&self) -> bool {
        !(self.q.is_empty() && self.owner.is_empty() && self.tag.is_empty())
    }
}

struct ProjectRow {
    name: String,
    /// The project's page.
    href: String,
    /// The file's fields (the table in `src/project/fields.rs`), shown as
    /// they are; the template picks the ones a row shows.
    fields: Fields,
    owner: OwnerView,
    /// (filter link, tag).
    tags: Vec<(String, String)>,
    repo: String,
    repo_href: String,
}

impl ProjectRow {
    /// Bytes of the row's values once escaped (the fields about as many
    /// as their JSON).
    fn html_len(&self) -> usize {
        let fields = serde_json::to_string(&self.fields).unwrap_or_default();
        [&self.name, &self.href, &fields, &self.repo, &self.repo_href]
            .iter()
            .map(|t| escaped_len(t))
            .sum::<usize>()
            + self.owner.html_len()
            + self
                .tags
                .iter()
                .map(|(href, tag)| 48 + escaped_len(href) + escaped_len(tag))
                .sum::<usize>()
    }
}

impl From<Entry> for ProjectRow {
    fn from(entry: Entry) -> Self {
        let repo_page = repo_href(&entry.repo);
        Self {
            href: format!("/projects/{}", entry.name),
            owner: OwnerView::new(&entry.fields.owner, &entry.resolved),
            tags: tag_links(&entry.fields.tags),
            fields: entry.fields,
            name: entry.name,
            repo_href: repo_page,
            repo: entry.repo,
        }
    }
}

/// Takes the same `owner`, `tag`, `q` and `cursor` as `/api/v1/projects`.
pub async fn projects(
    State(state): State<AppState>,
    viewer: Viewer,
    params: Result<ApiQuery<ProjectParams>, ApiError>,
) -> Result<ProjectsTemplate, PageError> {
    // A malformed query string shows as a page, not as the API's JSON.
    let ApiQuery(params) = params?;
    let filter = params.to_filter()?;
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let mut page = registry::list_projects(&state.pool, &filter).await?;
    if filter.owner.is_some() {
        page.items = privacy.found_by_owner(page.items);
    }
    page.items = privacy.entries(page.items);
    let q = filter.q.clone().unwrap_or_default();
    let owner = filter.owner.clone().unwrap_or_default();
    let tag = filter.tag.clone().unwrap_or_default();
    let filters = [
        ("q", Some(q.as_str())),
        ("owner", Some(&owner)),
        ("tag", Some(&tag)),
    ];
    let mut rows: Vec<ProjectRow> = page.items.into_iter().map(ProjectRow::from).collect();
    // Rows grow when escaped: a page keeps to the bound as HTML too.
    let cursor = if keep_rows(&mut rows, ITEMS_BUDGET, ProjectRow::html_len) {
        rows.last().map(|row| project_cursor(&row.name))
    } else {
        page.next_cursor
    };
    let next_href = cursor.as_deref().map(|cursor| {
        let mut pairs = filters.to_vec();
        pairs.push(("cursor", Some(cursor)));
        href_with("/projects", &pairs)
    });
    Ok(ProjectsTemplate {
        chrome: Chrome::for_viewer(viewer),
        rows,
        paged: filter.cursor.is_some(),
        first_href: href_with("/projects", &filters),
        q,
        owner,
        tag,
        next_href,
    })
}
