//! `GET /repos/{owner}/{name}`: why a repository is in its state. Its full
//! error (and the next retry, the owner of a conflicting name), its entries
//! with every field, its event timeline and its recent webhook deliveries.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use chrono::{DateTime, Utc};

use super::chrome::{Chrome, DoneParam};
use super::entry_view::EntryView;
use super::error_page::PageError;
use crate::controller::{ItemStatus, WorkQueue};
use crate::registry::budget::ITEMS_BUDGET;
use crate::registry::check_records::check_runs::recent_checks;
use crate::registry::read_models::query::repo_source_info;
use crate::registry::{self, RepoEvent, Status};
use crate::web::delivery_log;
use crate::web::error::{repo_not_found, ApiError};
use crate::web::extract::ApiPath;
use crate::web::html_budget::{escaped_len, keep_rows};
use crate::web::privacy::Privacy;
use crate::web::session::Viewer;
use crate::web::state::AppState;
use crate::web::view::{
    commit_link, duration_text, format_time, href_with, project_file_link, repo_href, short_sha,
    web_link, DeliveryView, StatusView, TimeView,
};

/// Deliveries shown on the page; the rest are one link away.
const RECENT_DELIVERIES: u32 = 10;

#[derive(Template, WebTemplate)]
#[template(path = "repo.html")]
pub struct RepoTemplate {
    chrome: Chrome,
    full_name: String,
    /// This page's own path, for the resync form.
    href: String,
    status: StatusView,
    /// What the status means, in a sentence.
    explanation: &'static str,
    /// The repository's page on the source's website.
    external_href: Option<String>,
    /// The project files its last reconcile read, each with its page on
    /// GitHub when there is one.
    files_read: Vec<(String, Option<String>)>,
    /// Where files are looked for (`ROSTER_PROJECT_FILES`), shown when no
    /// file was read.
    project_files: String,
    synced_sha: String,
    synced_sha_href: Option<String>,
    /// A local folder (the `dir:` source): what it syncs is a digest of the
    /// file, not a commit, and GitHub's checks and deliveries never apply.
    local: bool,
    last_sync: Option<TimeView>,
    attempts: i32,
    error: Option<String>,
    error_title: &'static str,
    retry: Option<String>,
    conflicts: Vec<ConflictView>,
    hold: Option<HoldView>,
    entries: Vec<EntryView>,
    /// How many entries the repository owns; the page may show fewer.
    entries_total: usize,
    entries_more: Option<MoreEntries>,
    events: Vec<EventView>,
    deliveries: Vec<DeliveryView>,
    deliveries_href: String,
    checks: Vec<CheckView>,
}

/// A `Roster` check run posted (or to be posted) on GitHub.
struct CheckView {
    at: TimeView,
    sha: String,
    sha_href: Option<String>,
    pull_request: Option<i32>,
    conclusion: String,
    title: String,
    /// Why GitHub does not have this run: shown instead of the conclusion.
    post_error: Option<String>,
}

struct ConflictView {
    project: String,
    owner: Option<(String, String)>,
}

struct HoldView {
    since: TimeView,
    reason: String,
}

struct EventView {
    at: TimeView,
    kind: String,
    message: String,
    /// Reconciles in a row that said the same; shown as `×N` past one.
    count: i64,
}

impl EventView {
    /// The timeline says what happened in one line: a multi-line message
    /// (an invalid file's problems) shows its first line and how many more
    /// there are, pointing up to the error shown in full when it is the
    /// current one.
    fn new(event: RepoEvent, now: DateTime<Utc>, current_error: Option<&str>) -> Self {
        let mut lines = event.message.lines();
        let first = lines.next().unwrap_or_default().to_owned();
        let more = lines.count();
        let message = match more {
            0 => event.message.clone(),
            _ if current_error.is_some_and(|e| !e.is_empty() && event.message.ends_with(e)) => {
                format!("{first} (and {more} more, in full above)")
            }
            _ => format!("{first} (and {more} more)"),
        };
        Self {
            at: TimeView::new(event.at, now),
            message: without_kind(&event.kind, message),
            kind: event.kind,
            count: event.count,
        }
    }
}

/// A message that starts with its kind and a commit (`invalid 88020a5: …`,
/// as reconciles record them) without the kind, which the timeline shows
/// beside it: `invalid` `at 88020a5: …`, not `invalid invalid 88020a5: …`.
fn without_kind(kind: &str, message: String) -> String {
    let commit = message
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|rest| {
            let sha: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
            sha.len() >= 7 && rest[sha.len()..].starts_with(':')
        });
    match commit {
        Some(rest) => format!("at {rest}"),
        None => message,
    }
}

fn explanation(status: Status) -> &'static str {
    match status {
        Status::Pending => "Known, not handled yet: a worker reads it shortly.",
        Status::Synced => "The project file was read and applied; the entries match it.",
        Status::NoFile => "The repository has no project file, so it owns no entry.",
        Status::Invalid => {
            "The project file breaks a rule. The entries are kept as they were until it is fixed."
        }
        Status::Conflict => {
            "A project name is owned by another repository. The other entries were applied."
        }
        Status::Error => {
            "GitHub or the database failed. The entries are kept as they were; Roster retries with backoff."
        }
        Status::Removed => {
            "Deleted, archived or no longer visible to the App; its entries were removed."
        }
    }
}

fn error_title(status: Status) -> &'static str {
    match status {
        Status::Invalid => "Problems in the project file",
        Status::Conflict => "Conflict",
        Status::Removed => "Why it was removed",
        // A pending repository's text says what it waits for (GitHub's
        // rate limit to reset): nothing failed.
        Status::Pending => "Waiting",
        _ => "Error",
    }
}

/// The queue's view of a failing repository, in words.
fn retry_text(item: &ItemStatus, now: DateTime<Utc>) -> String {
    let attempts = match item.attempts {
        0 => String::new(),
        1 => " after 1 failed attempt".to_owned(),
        n => format!(" after {n} failed attempts"),
    };
    if item.claimed {
        format!("A worker is retrying it now{attempts}.")
    } else if item.ready_in.is_zero() {
        format!("Waiting for a worker{attempts}.")
    } else {
        let at = now + chrono::Duration::from_std(item.ready_in).unwrap_or_default();
        format!(
            "Next retry in {} (at {}){attempts}.",
            duration_text(item.ready_in.as_secs()),
            format_time(Some(at))
        )
    }
}

/// Entries a repository page leaves out past its byte bound.
#[derive(Debug)]
struct MoreEntries {
    count: usize,
    /// The API answer that goes on from the last entry shown.
    href: String,
}

/// Bytes of a repository page given to its entries: the page's bound less
/// what its other parts take at most (the error, 50 events, 20 deliveries,
/// 20 checks).
const ENTRIES_BUDGET: usize = ITEMS_BUDGET / 2;

pub async fn repo_detail(
    State(state): State<AppState>,
    viewer: Viewer,
    done: Result<Query<DoneParam>, QueryRejection>,
    path: Result<ApiPath<(String, String)>, ApiError>,
) -> Result<RepoTemplate, PageError> {
    let ApiPath((owner, name)) = path?;
    let detail = registry::get_repo_under(&state.pool, &owner, &name, state.relations)
        .await?
        .ok_or_else(|| repo_not_found(&owner, &name))?;
    let repo = detail.repo;
    let now = Utc::now();
    // Entries are the one part of the page without a bound of their own
    // (a repository may hold 1,000): they take what the page's byte bound
    // leaves, the rest is linked as JSON.
    let privacy = Privacy::for_viewer(&viewer, &state.pool).await?;
    let mut entries = privacy.entries(detail.entries);
    let entries_total = entries.len();
    let cut = keep_rows(&mut entries, ENTRIES_BUDGET, |e| {
        escaped_len(&serde_json::to_string(e).unwrap_or_default())
    });
    let entries_more = cut.then(|| MoreEntries {
        count: entries_total - entries.len(),
        href: format!(
            "/api/v1/repos/{}?entries_after={}",
            repo.full_name,
            entries.last().map(|e| e.name.as_str()).unwrap_or_default()
        ),
    });
    // Which dependency names shown are projects: an unknown one is marked
    // on its entry (the overview's "to fix" links here), unless relations
    // are not checked at all (`ROSTER_RELATIONS=off`).
    let checked = state.relations != crate::project::relations::RelationsMode::Off;
    let mut wanted: Vec<String> = entries
        .iter()
        .flat_map(|e| e.fields.depends_on.iter().cloned())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    if !checked {
        wanted.clear();
    }
    let known = crate::registry::read_models::relations::existing(&state.pool, &wanted).await?;
    let (info, deliveries, checks) = tokio::try_join!(
        async {
            repo_source_info(&state.pool, repo.id)
                .await
                .map_err(PageError::from)
        },
        async {
            delivery_log::page(&state.pool, RECENT_DELIVERIES, None, Some(&repo.full_name))
                .await
                .map_err(PageError::from)
        },
        async {
            recent_checks(&state.pool, repo.id)
                .await
                .map_err(PageError::from)
        },
    )?;
    let retry = if repo.status == Status::Error {
        let item =
            state.queue.status(&repo.id).await.map_err(|error| {
                ApiError::unavailable("repo page: cannot read the queue", &error)
            })?;
        Some(match item {
            Some(item) => retry_text(&item, now),
            None => "Not in the queue: the next trigger or listing retries it.".to_owned(),
        })
    } else {
        None
    };
    // A local folder has no page on GitHub, nor commits to link to.
    let local = crate::source::dir::is_local(repo.id);
    let web = state.github_web_url.as_deref().filter(|_| !local);
    let full_sha = repo.synced_sha.clone().unwrap_or_default();
    let current_error = repo.error.clone();
    Ok(RepoTemplate {
        chrome: Chrome::new(viewer, &done.map(|Query(d)| d).unwrap_or_default()),
        href: repo_href(&repo.full_name),
        status: repo.status.into(),
        explanation: match (repo.status, &repo.error) {
            (Status::Pending, Some(_)) => {
                "Known, waiting to be read: GitHub's rate limit is spent until the time below. \
                 The entries are kept as they were."
            }
            (status, _) => explanation(status),
        },
        external_href: web_link(web, &repo.full_name, &[]),
        // Patterns (several files) have no one page to link to; each
        // entry links to its own file.
        files_read: files_read(&info.files_read, repo.status, &state.project_file)
            .iter()
            .map(|path| {
                let branch = info.default_branch.as_deref();
                let href = project_file_link(web, &repo.full_name, branch, path);
                (path.clone(), href)
            })
            .collect(),
        project_files: state.project_file.clone(),
        synced_sha_href: commit_link(web, &repo.full_name, &full_sha),
        local,
        synced_sha: full_sha,
        last_sync: TimeView::maybe(repo.last_synced_at, now),
        attempts: repo.attempts,
        error: repo.error,
        error_title: error_title(repo.status),
        retry,
        conflicts: info
            .conflicts
            .into_iter()
            .map(|c| ConflictView {
                project: c.project,
                owner: c.owner_repo.map(|r| (repo_href(&r), r)),
            })
            .collect(),
        hold: repo.hold.map(|hold| HoldView {
            since: TimeView::new(hold.since, now),
            reason: hold.reason,
        }),
        entries_total,
        entries_more,
        entries: entries
            .into_iter()
            .map(|e| {
                EntryView::new(e, web, info.default_branch.as_deref(), now, |name| {
                    !checked || known.contains(name)
                })
            })
            .collect(),
        events: detail
            .events
            .into_iter()
            .map(|e| EventView::new(e, now, current_error.as_deref()))
            .collect(),
        deliveries: deliveries
            .items
            .into_iter()
            .map(|d| DeliveryView::new(d, now))
            .collect(),
        deliveries_href: href_with("/deliveries", &[("repo", Some(&repo.full_name))]),
        checks: checks
            .into_iter()
            .map(|c| CheckView {
                at: TimeView::new(c.at, now),
                sha: short_sha(Some(&c.sha)),
                sha_href: commit_link(web, &repo.full_name, &c.sha),
                pull_request: c.pull_request,
                conclusion: c.decided,
                title: c.title,
                post_error: c.post_error.filter(|_| !c.posted),
            })
            .collect(),
        full_name: repo.full_name,
    })
}

/// The files to name as read: those recorded; else, for a repository whose
/// one plain project file was read but declared nothing usable (invalid,
/// say), that file; else none.
fn files_read(recorded: &[String], status: Status, project_files: &str) -> Vec<String> {
    let one_plain_file = !project_files.contains(['*', ',']);
    let read_something = !matches!(status, Status::NoFile | Status::Pending | Status::Removed);
    if recorded.is_empty() && one_plain_file && read_something {
        vec![project_files.to_owned()]
    } else {
        recorded.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_timeline_should_name_an_event_kind_once() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let event = |kind: &str, message: &str| RepoEvent {
            at: now,
            kind: kind.to_owned(),
            message: message.to_owned(),
            count: 1,
        };
        let shown = |kind, message| EventView::new(event(kind, message), now, None).message;
        assert_eq!(
            shown("invalid", "invalid 88020a5: file: not YAML"),
            "at 88020a5: file: not YAML"
        );
        assert_eq!(
            shown("synced", "synced 1a2b3c4: unchanged"),
            "at 1a2b3c4: unchanged"
        );
        // Words after the kind that are no commit stay as they are.
        assert_eq!(
            shown("error", "error reading the file"),
            "error reading the file"
        );
        assert_eq!(shown("no_file", "no project.yaml"), "no project.yaml");
    }

    #[test]
    fn retry_text_should_say_when_the_next_attempt_comes() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let item = |attempts, ready_in, claimed| ItemStatus {
            attempts,
            last_error: None,
            ready_in: Duration::from_secs(ready_in),
            claimed,
        };
        assert_eq!(
            retry_text(&item(3, 120, false), now),
            "Next retry in 2 min (at 2023-11-14 22:15:20 UTC) after 3 failed attempts."
        );
        assert_eq!(
            retry_text(&item(1, 0, false), now),
            "Waiting for a worker after 1 failed attempt."
        );
        assert_eq!(
            retry_text(&item(2, 0, true), now),
            "A worker is retrying it now after 2 failed attempts."
        );
    }
}
