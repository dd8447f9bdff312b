//! The change feed and history: `GET /api/v1/changes` (a long poll),
//! `GET /api/v1/projects/{name}/history` and `GET /api/v1/notify`.
//!
//! The feed has a router of its own (declared in `router.rs`): a long poll
//! may last up to [`MAX_WAIT`], past the 30 s every other request gets, so
//! it is merged beside the main router with a timeout of its own.

use std::time::Duration;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::error::{ApiError, BadParameter, ErrorJson};
use super::extract::{ApiPath, ApiQuery};
use super::json::{shown_changes, ChangeJson, FeedJson, PageJson};
use super::long_polls::LongPolls;
use super::privacy::Privacy;
use super::state::AppState;
use crate::notify::outbox::TargetStatus;
use crate::registry::changes::{self, ChangeWaker, Feed, FeedError};
use crate::shutdown::Shutdown;

pub use super::long_polls::DEFAULT_LONG_POLLS;

/// Longest `wait` a reader may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// Changes a read answers when it does not say.
pub const DEFAULT_FEED_LIMIT: i64 = 100;

/// What the feed's route needs.
#[derive(Clone)]
pub struct ChangesState {
    pub pool: PgPool,
    pub waker: ChangeWaker,
    /// The server's shutdown: waiting readers are answered at once.
    pub stop: Shutdown,
    /// How many may wait at once (`ROSTER_LONG_POLLS`).
    pub long_polls: LongPolls,
    /// The API token and sessions, to tell a reader with credentials
    /// (docs/contract.md#what-a-reader-without-credentials-sees); `None`: every reader sees what one without sees.
    pub access: Option<AppState>,
}

/// `?after=&limit=&wait=`, taken as text and checked here.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FeedParams {
    /// The changes after this `seq` (default 0, the oldest kept).
    #[param(value_type = Option<u64>, minimum = 0)]
    pub after: Option<String>,
    /// At most this many changes (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// Hold the answer up to this many seconds (at most 60) until a change
    /// commits; a duration with its unit (`30s`, `500ms`) is read too.
    #[param(value_type = Option<u8>, minimum = 0, maximum = 60)]
    pub wait: Option<String>,
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A checked feed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedRequest {
    pub after: i64,
    pub limit: i64,
    pub wait: Duration,
}

impl FeedParams {
    pub fn check(&self) -> Result<FeedRequest, ApiError> {
        let after = match given(&self.after) {
            None => 0,
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "after: {v:?} is not a seq (a whole number, 0 or more)"
                ))
            })?,
        };
        let limit = match given(&self.limit) {
            None => DEFAULT_FEED_LIMIT,
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=changes::read::MAX_FEED_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "limit: {v:?} is not a whole number from 1 to {}",
                        changes::read::MAX_FEED_LIMIT
                    ))
                })?,
        };
        let wait = match given(&self.wait) {
            None => Duration::ZERO,
            Some(v) => v
                .parse::<u64>()
                .map(Duration::from_secs)
                .or_else(|_| humantime::parse_duration(v))
                .ok()
                .filter(|d| *d <= MAX_WAIT)
                .ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "wait: {v:?} is not a duration of at most 60 seconds (like 30 or 30s)"
                    ))
                })?,
        };
        Ok(FeedRequest { after, limit, wait })
    }
}

/// `GET /api/v1/changes`: the changes after `after`, oldest first; with
/// `wait`, held until one commits or the wait ends.
#[utoipa::path(get, path = "/api/v1/changes", operation_id = "list_changes",
    tag = "changes", params(FeedParams), security((), ("token" = [])),
    responses((status = 200, description = "The changes after `after`, oldest first", body = FeedJson),
              BadParameter,
              (status = 410, description = "Changes after `after` are no longer kept", body = GoneJson)))]
pub async fn feed(
    State(state): State<ChangesState>,
    mut parts: Parts,
    params: Result<ApiQuery<FeedParams>, ApiError>,
) -> Response {
    let request = match params.and_then(|ApiQuery(p)| p.check()) {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let privacy = match &state.access {
        Some(app) => Privacy::from_request_parts(&mut parts, app).await,
        None => Privacy::public(&state.pool).await,
    };
    let privacy = match privacy {
        Ok(privacy) => privacy,
        Err(error) => return error.into_response(),
    };
    match long_poll(&state, request, &privacy).await {
        Ok(feed) => {
            let (items, cut) = shown_changes(feed.items);
            // A page cut short goes on after its last change; a whole one
            // after the last change read, shown or not.
            let next_cursor = match items.last() {
                Some(last) if cut => last.seq,
                _ => feed.next_cursor,
            };
            Json(FeedJson { items, next_cursor }).into_response()
        }
        Err(FeedError::Gone { after, oldest }) => (
            StatusCode::GONE,
            Json(GoneJson {
                error: format!(
                    "changes after {after} are no longer kept; read the registry afresh \
                     and continue after {}",
                    oldest - 1
                ),
                oldest_seq: oldest,
            }),
        )
            .into_response(),
        Err(FeedError::Registry(error)) => ApiError::from(error).into_response(),
    }
}

/// The 410 of a reader behind the log: what to do, and the oldest `seq` kept.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct GoneJson {
    pub error: String,
    pub oldest_seq: i64,
}

/// Reads the changes the reader may see; when nothing is new, waits for a
/// change after `after` to commit and reads again, until the wait ends or
/// the server stops. Changes left out for the reader (see
/// [`Privacy::changes`]) are read past, so an answer is empty only at the
/// end of the log, and its cursor is past them. Waiting reads nothing: the
/// commit's `NOTIFY` wakes the poll (see [`ChangeWaker::wait_past`]). Past
/// the cap of waiting polls, answers at once with what there is.
async fn long_poll(
    state: &ChangesState,
    mut request: FeedRequest,
    privacy: &Privacy,
) -> Result<Feed, FeedError> {
    let deadline = tokio::time::Instant::now() + request.wait;
    let stop = &state.stop;
    let mut place = None;
    loop {
        let heard = state.waker.now();
        state.long_polls.read();
        let read = changes::changes_after(&state.pool, request.after, request.limit).await?;
        let read_any = !read.items.is_empty();
        let feed = Feed {
            items: privacy.changes(read.items),
            next_cursor: read.next_cursor,
        };
        if !feed.items.is_empty() {
            return Ok(feed);
        }
        if read_any {
            // All left out: read on past them, to the end of the log.
            request.after = feed.next_cursor;
            continue;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || stop.is_stopped() {
            return Ok(feed);
        }
        if place.is_none() {
            place = state.long_polls.try_wait();
            if place.is_none() {
                return Ok(feed);
            }
        }
        tokio::select! {
            woken = state.waker.wait_past(heard, request.after, left) => {
                if !woken {
                    // The wait is over and nothing was announced.
                    return Ok(feed);
                }
            }
            () = stop.wait() => return Ok(feed),
        }
    }
}

/// `?cursor=&limit=` of an entry's history (`before=` is the older name of
/// `cursor`); `after` is refused, history going newest first.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// The changes before this `seq` (the previous page's `next_cursor`).
    #[param(value_type = Option<u64>, minimum = 0)]
    pub cursor: Option<String>,
    /// The older name of `cursor`, still read; not in the OpenAPI
    /// document, since a request gives one or the other.
    #[param(ignore)]
    pub before: Option<String>,
    /// At most this many changes (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// Refused with a 400: history goes newest first (the feed takes it).
    /// Not in the OpenAPI document, which lists what a route takes.
    #[param(ignore)]
    pub after: Option<String>,
}

impl HistoryParams {
    /// The `seq` the page goes on before, and the limit; a bad value, or
    /// `after`, is a 400 as on the feed.
    fn check(&self) -> Result<(Option<i64>, i64), ApiError> {
        if let Some(after) = given(&self.after) {
            return Err(ApiError::BadRequest(format!(
                "after: {after:?} is not taken here: history goes newest first; \
                 pass next_cursor as cursor"
            )));
        }
        let (name, given_cursor) = match (given(&self.cursor), given(&self.before)) {
            (Some(_), Some(_)) => {
                return Err(ApiError::BadRequest(
                    "cursor: give cursor or before, not both".to_owned(),
                ))
            }
            (Some(c), None) => ("cursor:", Some(c)),
            (None, b) => ("before:", b),
        };
        let check = FeedParams {
            after: given_cursor.map(str::to_owned),
            limit: self.limit.clone(),
            wait: None,
        }
        .check()
        .map_err(|e| ApiError::BadRequest(e.to_string().replacen("after:", name, 1)))?;
        Ok((given_cursor.map(|_| check.after), check.limit))
    }
}

/// `GET /api/v1/projects/{name}/history`: the name's changes, newest
/// first, also after it was removed, at most 1 MiB a page; `404` when it
/// never had one.
#[utoipa::path(get, path = "/api/v1/projects/{name}/history", operation_id = "get_project_history",
    tag = "changes", security((), ("token" = [])),
    params(("name" = String, Path, description = "The project's name"), HistoryParams),
    responses((status = 200, description = "The name's changes, newest first", body = PageJson<ChangeJson>),
              BadParameter,
              (status = 404, description = "The name never had a change", body = ErrorJson)))]
pub async fn history(
    privacy: Privacy,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(params): ApiQuery<HistoryParams>,
) -> Result<Json<PageJson<ChangeJson>>, ApiError> {
    let (before, limit) = params.check()?;
    let page = changes::history(&state.pool, &name, before, limit).await?;
    if page.items.is_empty() && before.is_none() {
        return Err(ApiError::NotFound(format!("project {name} has no history")));
    }
    // Where the next page goes on when no shown change was cut: past the
    // last change read, also when the reader may not see it.
    let read_to = page.items.last().map(|c| c.seq);
    let more = page.more;
    let (items, cut) = shown_changes(privacy.changes(page.items));
    let next_cursor = match items.last() {
        Some(last) if cut => Some(last.seq),
        _ => read_to.filter(|_| more),
    }
    .map(|seq| seq.to_string());
    Ok(Json(PageJson { items, next_cursor }))
}

/// The notification targets, each with its backlog.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TargetsJson {
    pub items: Vec<TargetStatus>,
}

/// `GET /api/v1/notify`: each notification target's backlog and last error.
#[utoipa::path(get, path = "/api/v1/notify", operation_id = "list_notify_targets",
    tag = "changes",
    responses((status = 200, description = "Every notification target", body = TargetsJson)))]
pub async fn notify_targets(State(state): State<AppState>) -> Result<Json<TargetsJson>, ApiError> {
    let items = crate::notify::outbox::status(&state.pool)
        .await
        .map_err(|e| ApiError::unavailable("notify status query failed", &e))?;
    Ok(Json(TargetsJson { items }))
}
