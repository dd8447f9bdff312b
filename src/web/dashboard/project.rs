//! `GET /projects/{name}`: one project (docs/contract.md#the-project-page).
//! Its fields, repository and file; what it depends on, each resolved or
//! unknown, with a mark when a production project depends on a deprecated
//! one; what depends on it; and the picture of its neighbourhood, drawn by
//! the server so the page needs no script.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use chrono::Utc;

use super::chrome::Chrome;
use super::entry_view::EntryView;
use super::error_page::PageError;
use super::picture::{self, Picture};
use crate::project::ProjectName;
use crate::registry::read_models::query::repo_source_info;
use crate::registry::read_models::relations::{self, Dependent};
use crate::registry::{self};
use crate::web::error::ApiError;
use crate::web::extract::ApiPath;
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::repo_href;

/// Steps each way the picture shows.
const PICTURE_DEPTH: u8 = 2;

/// Nodes read for the picture: three times what it draws, so that a page
/// whose neighbourhood is larger says `at least N more` instead of reading
/// all of it (in a registry where everything depends on everything, the
/// read of 1,000 neighbours was most of the page's time).
const PICTURE_READ: usize = 300;

#[derive(Template, WebTemplate)]
#[template(path = "project.html")]
pub struct ProjectTemplate {
    chrome: Chrome,
    e: EntryView,
    repo: String,
    repo_href: String,
    dependencies: Vec<DependencyView>,
    dependents: Vec<Dependent>,
    dependents_count: usize,
    /// Dependencies a production project should not have: deprecated ones.
    deprecated: Vec<String>,
    picture: Picture,
}

impl ProjectTemplate {
    /// The dependents not listed.
    fn dependents_more(&self) -> usize {
        self.dependents_count.saturating_sub(self.dependents.len())
    }
}

/// One dependency and what it names now.
struct DependencyView {
    name: String,
    /// Whether a project has that name.
    resolved: bool,
    lifecycle: Option<String>,
}

fn not_found(name: &str) -> PageError {
    ApiError::NotFound(format!("project {name} not found")).into()
}

/// The page of the project `name`; 404 when no entry has that name.
pub async fn project_page(
    State(state): State<AppState>,
    viewer: Viewer,
    path: Result<ApiPath<String>, ApiError>,
) -> Result<ProjectTemplate, PageError> {
    let ApiPath(name) = path?;
    // Only a project name can be an entry's: nothing else is looked up.
    let Ok(name) = ProjectName::parse(&name) else {
        return Err(not_found(&name.chars().take(64).collect::<String>()));
    };
    let name = name.as_str();
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let Some(entry) = registry::get_project(&state.pool, name).await? else {
        return Err(not_found(name));
    };
    let pool = &state.pool;
    let (dependents, lifecycles, graph, info) = tokio::try_join!(
        relations::dependents_of(pool, name),
        relations::lifecycles(pool, &entry.fields.depends_on),
        relations::neighbourhood(pool, name, PICTURE_DEPTH, PICTURE_READ),
        repo_source_info(pool, entry.repo_id),
    )?;
    let graph = graph.unwrap_or_default();
    // Laying out is work for a thread of its own, not the server's.
    let picture = tokio::task::spawn_blocking(move || picture::draw(&graph))
        .await
        .map_err(|error| ApiError::unavailable("project page: the picture failed", &error))?;
    let dependencies: Vec<DependencyView> = entry
        .fields
        .depends_on
        .iter()
        .map(|name| DependencyView {
            name: name.clone(),
            resolved: lifecycles.contains_key(name),
            lifecycle: lifecycles.get(name).cloned().flatten(),
        })
        .collect();
    let production = entry.fields.lifecycle.as_deref() == Some("production");
    let deprecated = dependencies
        .iter()
        .filter(|d| production && d.lifecycle.as_deref() == Some("deprecated"))
        .map(|d| d.name.clone())
        .collect();
    let local = crate::source::dir::is_local(entry.repo_id);
    let web = state.github_web_url.as_deref().filter(|_| !local);
    let entry = privacy.entry(entry);
    Ok(ProjectTemplate {
        chrome: Chrome::for_viewer(viewer),
        repo_href: repo_href(&entry.repo),
        repo: entry.repo.clone(),
        e: EntryView::new(
            entry,
            web,
            info.default_branch.as_deref(),
            Utc::now(),
            |name| lifecycles.contains_key(name),
        ),
        dependencies,
        dependents_count: dependents.total,
        dependents: dependents.items,
        deprecated,
        picture,
    })
}
