//! `GET /projects/{name}/history`: an entry's changes, newest first, each
//! with its field diff, commit and cause; also after the entry was removed.
//! `GET /changes`: the organisation's change stream (see
//! [`super::change_stream`]), then notification targets (backlog, last
//! error) and the entries removed most recently, each with its last version.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use chrono::Utc;

use super::change_row::{page_rows, ChangeRow, HALF_PAGE};
use super::change_stream::{self, StreamParams, StreamView};
use super::chrome::Chrome;
use super::error_page::PageError;
use crate::notify::outbox::{self, TargetStatus};
use crate::registry::budget::ITEMS_BUDGET;
use crate::registry::changes;
use crate::web::error::ApiError;
use crate::web::extract::{ApiPath, ApiQuery};
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::TimeView;

/// Changes an entry's page shows.
const HISTORY_ROWS: i64 = 100;

/// Removed entries `/changes` lists.
const REMOVED_ROWS: i64 = 50;

#[derive(Template, WebTemplate)]
#[template(path = "history.html")]
pub struct HistoryTemplate {
    chrome: Chrome,
    name: String,
    /// The entry's repository page, while the entry exists.
    current_href: Option<String>,
    rows: Vec<ChangeRow>,
    /// Whether this is an older page (`?before=`).
    paged: bool,
    first_href: String,
    /// The older changes, when there are more.
    next_href: Option<String>,
}

/// `?before=SEQ`: the page of changes older than `SEQ`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct PageParams {
    pub before: Option<String>,
}

impl PageParams {
    fn before(&self) -> Result<Option<i64>, ApiError> {
        match self
            .before
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            None => Ok(None),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .map(Some)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("before: {v:?} is not a seq (a whole number)"))
                }),
        }
    }
}

/// `GET /projects/{name}/history?before=SEQ`: a page of the entry's
/// changes, newest first, with a link to the older ones.
pub async fn entry_history(
    State(state): State<AppState>,
    viewer: Viewer,
    path: Result<ApiPath<String>, ApiError>,
    params: Result<ApiQuery<PageParams>, ApiError>,
) -> Result<HistoryTemplate, PageError> {
    let ApiPath(name) = path?;
    let ApiQuery(params) = params?;
    let before = params.before()?;
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let history = changes::history(&state.pool, &name, before, HISTORY_ROWS).await?;
    if history.items.is_empty() && before.is_none() {
        return Err(ApiError::NotFound(format!("project {name} has no history")).into());
    }
    let current = crate::registry::get_project(&state.pool, &name).await?;
    let (rows, next) = page_rows(
        history,
        &privacy,
        state.github_web_url.as_deref(),
        ITEMS_BUDGET,
    );
    let first_href = format!("/projects/{}/history", urlencoding(&name));
    Ok(HistoryTemplate {
        chrome: Chrome::for_viewer(viewer),
        current_href: current.map(|e| format!("/projects/{}", e.name)),
        rows,
        paged: before.is_some(),
        next_href: next.map(|seq| format!("{first_href}?before={seq}")),
        first_href,
        name,
    })
}

/// A path segment, percent-encoded.
fn urlencoding(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

#[derive(Template, WebTemplate)]
#[template(path = "changes.html")]
pub struct ChangesTemplate {
    chrome: Chrome,
    stream: StreamView,
    targets: Vec<TargetRow>,
    removed: Vec<ChangeRow>,
}

/// A notification target as a row.
pub struct TargetRow {
    target: String,
    backlog: i64,
    stalled: bool,
    last_error: String,
    last_error_at: Option<TimeView>,
    last_sent_at: Option<TimeView>,
}

impl TargetRow {
    fn new(t: TargetStatus, now: chrono::DateTime<Utc>) -> Self {
        Self {
            target: t.target,
            backlog: t.backlog,
            stalled: t.stalled,
            last_error: t.last_error.unwrap_or_default(),
            last_error_at: TimeView::maybe(t.last_error_at, now),
            last_sent_at: TimeView::maybe(t.last_sent_at, now),
        }
    }
}

/// `GET /changes`: the change stream, the targets, the newest removals.
pub async fn changes_page(
    State(state): State<AppState>,
    viewer: Viewer,
    params: Result<ApiQuery<StreamParams>, ApiError>,
) -> Result<ChangesTemplate, PageError> {
    let ApiQuery(params) = params?;
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let stream = change_stream::load(&state, &params, &privacy).await?;
    let targets = outbox::status(&state.pool)
        .await
        .map_err(|e| ApiError::unavailable("notify status query failed", &e))?;
    let removed = changes::removed_before(&state.pool, None, REMOVED_ROWS).await?;
    let now = Utc::now();
    // The newest removals that fit in the half of the page the stream
    // leaves; older ones are in the stream (kind "removed").
    let (removed, _) = page_rows(
        removed,
        &privacy,
        state.github_web_url.as_deref(),
        HALF_PAGE,
    );
    Ok(ChangesTemplate {
        chrome: Chrome::for_viewer(viewer),
        stream,
        targets: targets
            .into_iter()
            .map(|t| TargetRow::new(t, now))
            .collect(),
        removed,
    })
}
