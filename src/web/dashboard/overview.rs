//! `GET /`: is everything in sync? Counts per status, the GitHub budget,
//! the queue, the periodic listing, and the repositories table.

use std::collections::BTreeMap;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use chrono::{DateTime, Utc};

use super::chrome::{Chrome, DoneParam};
use super::error_page::PageError;
use crate::registry::read_models::query::{
    listing_times, queue_summary, ListingTimes, QueueSummary,
};
use crate::registry::{self, Repo, RepoFilter, Status};
use crate::source::InstallationId;
use crate::web::error::ApiError;
use crate::web::extract::ApiQuery;
use crate::web::params::RepoParams;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::{
    commit_link, duration_text, first_line, href_with, repo_href, short_sha, thousands, StatusView,
    TimeView,
};

/// Width of the status bar in SVG user units.
const BAR_WIDTH: i64 = 1000;

#[derive(Template, WebTemplate)]
#[template(path = "overview.html")]
pub struct OverviewTemplate {
    chrome: Chrome,
    summary: Summary,
    /// The search box's value and the status filter, echoed back.
    q: String,
    status: String,
    status_options: Vec<(&'static str, bool)>,
    rows: Vec<RepoRow>,
    /// This page does not start the list (a cursor was given).
    paged: bool,
    first_href: String,
    next_href: Option<String>,
    /// What installations lack: checks, owner checking, what Roster asks for.
    notices: super::notices::Notices,
}

impl OverviewTemplate {
    fn filtered(&self) -> bool {
        !self.q.is_empty() || !self.status.is_empty()
    }
}

/// The cards above the table.
struct Summary {
    total: String,
    synced: String,
    all_href: String,
    all_selected: bool,
    counts: Vec<CountBadge>,
    segments: Vec<Segment>,
    budget: Budget,
    queue: QueueView,
    listing: ListingView,
}

struct CountBadge {
    status: StatusView,
    count: String,
    href: String,
    selected: bool,
}

/// One status's share of the bar, in [`BAR_WIDTH`] units.
struct Segment {
    name: &'static str,
    x: i64,
    width: i64,
    title: String,
    href: String,
}

/// The GitHub rate-limit budget, per installation.
enum Budget {
    /// The local folder source makes no GitHub requests.
    NotApplicable,
    NoAnswerYet,
    Installations(Vec<InstallationBudget>),
}

struct InstallationBudget {
    installation: InstallationId,
    remaining: i64,
    remaining_text: String,
    /// For the `<meter>`: GitHub's hourly budget of an installation, as it
    /// reported it (5,000 at least; more for large organisations).
    max: i64,
    /// The meter turns red below a tenth of the budget, amber below 30 %.
    low: i64,
    high: i64,
}

struct QueueView {
    depth: String,
    ready: String,
    retrying: String,
    in_progress: String,
    /// How long the longest-waiting ready id has waited, if any waits.
    oldest_wait: Option<String>,
}

impl From<QueueSummary> for QueueView {
    fn from(q: QueueSummary) -> Self {
        let now = Utc::now();
        Self {
            depth: thousands(q.depth),
            ready: thousands(q.ready),
            retrying: thousands(q.retrying),
            in_progress: thousands(q.in_progress),
            oldest_wait: q
                .oldest_ready_since
                .map(|since| duration_text((now - since).num_seconds().max(0).unsigned_abs())),
        }
    }
}

struct ListingView {
    last_finished: Option<TimeView>,
    last_started: Option<TimeView>,
    /// When the next listing is due, in words ("in 42 min", "now").
    next: String,
    interval: String,
}

impl ListingView {
    fn new(times: &ListingTimes, interval: std::time::Duration, now: DateTime<Utc>) -> Self {
        let next = if times.requested {
            "requested, starts within seconds".to_owned()
        } else {
            match times.last_started_at {
                None => "when the server starts".to_owned(),
                Some(started) => {
                    let due = started
                        + chrono::Duration::from_std(interval)
                            .unwrap_or_else(|_| chrono::Duration::hours(1));
                    if due <= now {
                        "due now".to_owned()
                    } else {
                        TimeView::new(due, now).text
                    }
                }
            }
        };
        Self {
            last_finished: TimeView::maybe(times.last_finished_at, now),
            last_started: TimeView::maybe(times.last_started_at, now),
            next,
            interval: duration_text(interval.as_secs()),
        }
    }
}

struct RepoRow {
    status: StatusView,
    full_name: String,
    href: String,
    /// Its entries' names, each a link to its page.
    projects: Vec<String>,
    sha: String,
    sha_href: Option<String>,
    last_sync: Option<TimeView>,
    error: String,
    held: bool,
    /// Entries whose owner is flagged: a mark beside the status, so that a
    /// `synced` repository with owners to fix shows it here, where people
    /// look first.
    warnings: i64,
}

impl RepoRow {
    fn new(repo: Repo, web: Option<&str>, now: DateTime<Utc>) -> Self {
        let full_sha = repo.synced_sha.clone().unwrap_or_default();
        Self {
            status: repo.status.into(),
            href: repo_href(&repo.full_name),
            sha: short_sha(repo.synced_sha.as_deref()),
            sha_href: commit_link(web, &repo.full_name, &full_sha),
            full_name: repo.full_name,
            projects: repo.projects,
            last_sync: TimeView::maybe(repo.last_synced_at, now),
            error: first_line(repo.error.as_deref()),
            held: repo.hold.is_some(),
            warnings: repo.warnings,
        }
    }
}

/// Takes the same `status`, `q` and `cursor` as `/api/v1/repos`.
pub async fn overview(
    State(state): State<AppState>,
    viewer: Viewer,
    done: Result<Query<DoneParam>, QueryRejection>,
    params: Result<ApiQuery<RepoParams>, ApiError>,
) -> Result<OverviewTemplate, PageError> {
    // A malformed query string shows as a page, not as the API's JSON.
    let ApiQuery(params) = params?;
    let filter = RepoFilter {
        relations: state.relations,
        ..params.to_filter()?
    };
    let now = Utc::now();
    let (counts, page, queue, listing) = tokio::try_join!(
        registry::status_counts(&state.pool),
        registry::list_repos(&state.pool, &filter),
        queue_summary(&state.pool),
        listing_times(&state.pool),
    )?;

    let q = filter.q.clone().unwrap_or_default();
    let status = filter
        .status
        .map(|s| s.as_str().to_owned())
        .unwrap_or_default();
    let budget = match state.github_web_url {
        None => Budget::NotApplicable,
        Some(_) => budget(state.metrics.rate_limits(), |id| {
            state.metrics.rate_limit_size_of(id)
        }),
    };
    let summary = Summary {
        total: thousands(counts.values().sum()),
        synced: thousands(counts.get(Status::Synced.as_str()).copied().unwrap_or(0)),
        all_href: href_with("/", &[("q", Some(&q))]),
        all_selected: filter.status.is_none(),
        counts: Status::ALL
            .into_iter()
            .map(|s| CountBadge {
                status: s.into(),
                count: thousands(counts.get(s.as_str()).copied().unwrap_or(0)),
                href: href_with("/", &[("status", Some(s.as_str())), ("q", Some(&q))]),
                selected: filter.status == Some(s),
            })
            .collect(),
        segments: segments(&counts, &q),
        budget,
        queue: queue.into(),
        listing: ListingView::new(&listing, state.resync_interval, now),
    };
    let next_href = page.next_cursor.as_deref().map(|cursor| {
        href_with(
            "/",
            &[
                ("status", Some(&status)),
                ("q", Some(&q)),
                ("cursor", Some(cursor)),
            ],
        )
    });
    let web = state.github_web_url.as_deref();
    let notices = super::notices::Notices::read(&state).await?;
    Ok(OverviewTemplate {
        notices,
        chrome: Chrome::new(viewer, &done.map(|Query(d)| d).unwrap_or_default()),
        summary,
        status_options: Status::ALL
            .into_iter()
            .map(|s| (s.as_str(), filter.status == Some(s)))
            .collect(),
        rows: page
            .items
            .into_iter()
            .map(|repo| RepoRow::new(repo, web, now))
            .collect(),
        paged: filter.cursor.is_some(),
        first_href: href_with("/", &[("status", Some(&status)), ("q", Some(&q))]),
        q,
        status,
        next_href,
    })
}

/// `size` gives each installation's hourly budget as GitHub reported it.
fn budget(
    limits: Vec<(InstallationId, i64)>,
    size: impl Fn(InstallationId) -> Option<i64>,
) -> Budget {
    if limits.is_empty() {
        return Budget::NoAnswerYet;
    }
    Budget::Installations(
        limits
            .into_iter()
            .map(|(installation, remaining)| {
                let max = size(installation)
                    .unwrap_or(remaining)
                    .max(remaining)
                    .max(1);
                InstallationBudget {
                    installation,
                    remaining,
                    remaining_text: thousands(remaining),
                    max,
                    low: max / 10,
                    high: max * 3 / 10,
                }
            })
            .collect(),
    )
}

/// The status bar: each non-empty status as a share of [`BAR_WIDTH`], the
/// last one absorbing rounding so the bar is always full.
fn segments(counts: &BTreeMap<String, i64>, q: &str) -> Vec<Segment> {
    let total: i64 = counts.values().sum();
    if total == 0 {
        return Vec::new();
    }
    let present: Vec<(Status, i64)> = Status::ALL
        .into_iter()
        .map(|s| (s, counts.get(s.as_str()).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let mut x = 0;
    let last = present.len().saturating_sub(1);
    present
        .into_iter()
        .enumerate()
        .map(|(i, (status, count))| {
            let width = if i == last {
                BAR_WIDTH - x
            } else {
                count * BAR_WIDTH / total
            };
            let segment = Segment {
                name: status.as_str(),
                x,
                width,
                title: format!("{}: {}", status.as_str(), thousands(count)),
                href: href_with("/", &[("status", Some(status.as_str())), ("q", Some(q))]),
            };
            x += width;
            segment
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_meter_should_use_the_limit_github_reported() {
        let Budget::Installations(shown) = budget(
            vec![(InstallationId(7), 9000), (InstallationId(8), 300)],
            |id| (id == InstallationId(7)).then_some(15_000),
        ) else {
            panic!("no installations shown")
        };
        assert_eq!(
            (shown[0].max, shown[0].low, shown[0].high),
            (15_000, 1_500, 4_500)
        );
        // Nothing reported: the meter is as full as what is left.
        assert_eq!(shown[1].max, 300);
    }

    #[test]
    fn segments_should_fill_the_bar_and_skip_empty_statuses() {
        let counts = BTreeMap::from([
            ("synced".to_owned(), 2),
            ("error".to_owned(), 1),
            ("pending".to_owned(), 0),
        ]);
        let bar = segments(&counts, "");
        let names: Vec<&str> = bar.iter().map(|s| s.name).collect();
        assert_eq!(names, ["synced", "error"]);
        assert_eq!(bar[0].x, 0);
        assert_eq!(bar[0].width, 666);
        assert_eq!(bar[1].x, 666);
        assert_eq!(bar[1].width, 334);
        assert_eq!(bar[1].href, "/?status=error");
        assert!(segments(&BTreeMap::new(), "").is_empty());
    }

    #[test]
    fn next_listing_should_say_when_it_is_due() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let hour = std::time::Duration::from_secs(3600);
        let started = |mins: i64| ListingTimes {
            last_started_at: Some(now - chrono::Duration::minutes(mins)),
            ..ListingTimes::default()
        };
        assert_eq!(ListingView::new(&started(18), hour, now).next, "in 42 min");
        assert_eq!(ListingView::new(&started(61), hour, now).next, "due now");
        let never = ListingTimes::default();
        assert_eq!(
            ListingView::new(&never, hour, now).next,
            "when the server starts"
        );
        let requested = ListingTimes {
            requested: true,
            ..started(1)
        };
        assert_eq!(
            ListingView::new(&requested, hour, now).next,
            "requested, starts within seconds"
        );
    }
}
