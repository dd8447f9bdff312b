//! Recovery of missed webhook deliveries (docs/contract.md#webhooks).
//!
//! GitHub never redelivers a failed delivery by itself: a webhook that found
//! Roster down, restarting or without its database is lost unless someone
//! asks. So, at start and every few minutes, one replica reads the App's
//! delivery log (`GET /app/hook/deliveries`, newest first), and for every
//! event of the last 3 days (GitHub's retention) that no attempt delivered
//! with a 2xx and that Roster has not received since, asks once for a
//! redelivery (`POST /app/hook/deliveries/{id}/attempts`).
//!
//! "Once" is kept in the `deliveries` table: the request sets
//! `redelivery_requested` on the event's row (inserting the row when Roster
//! never saw the event), so the next pass, on any replica, skips it, and the
//! deliveries list shows what was asked. Which replica reads the log is
//! decided by the one-row `redelivery_schedule` table, as the periodic
//! listing is.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use axum::http::Method;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::PgPool;
use url::Url;

use super::deliveries::{self, DeliveriesError, NewDelivery};
use crate::controller::Failure;
use crate::github::http::next_link;
use crate::github::source::GithubSource;
use crate::registry::RegistryError;
use crate::source::RepoId;

/// How far back GitHub keeps deliveries and accepts redelivery requests.
pub const WINDOW: Duration = Duration::from_secs(3 * 24 * 3600);

/// How often the log is read when the caller has no better idea.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// At start a replica reads the log unless another one did this recently:
/// a restart is exactly when deliveries were missed.
const START_GAP: Duration = Duration::from_secs(30);

/// GitHub's largest page.
const PER_PAGE: &str = "100";

/// A bound on one pass's reading (10,000 attempts): a log that never ends
/// must not keep a replica busy forever.
const MAX_PAGES: usize = 100;

/// The `outcome` of a delivery Roster never received but asked GitHub to
/// redeliver; the redelivery, when it arrives, replaces it.
pub const OUTCOME_REQUESTED: &str = "redelivery_requested";

/// The `outcome` of a delivery GitHub refused to redeliver (too old, gone):
/// it is not asked for again.
pub const OUTCOME_REFUSED: &str = "redelivery_refused";

/// Why a pass stopped before it was done. Nothing it did not finish is
/// recorded, so the next pass does it.
#[derive(Debug, thiserror::Error)]
pub enum RedeliveryError {
    #[error("reading the webhook delivery log: {0}")]
    Log(#[source] Failure),
    #[error("reading the webhook delivery log: GitHub answered {status}: {message}")]
    LogRefused { status: u16, message: String },
    #[error("reading the webhook delivery log: unexpected answer from GitHub: {0}")]
    LogUnreadable(#[source] serde_json::Error),
    /// A `Link` header this server will not follow.
    #[error("reading the webhook delivery log: next page {0}")]
    LogNextPage(&'static str),
    #[error("recording redeliveries: {0}")]
    Database(#[from] sqlx::Error),
    #[error("recording redeliveries: {0}")]
    Deliveries(#[from] DeliveriesError),
    #[error("recording redeliveries: {0}")]
    Registry(#[from] RegistryError),
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Attempts of the last 3 days read from the log.
    pub read: usize,
    /// Events (guids, i.e. `X-GitHub-Delivery`) asked for a redelivery.
    pub requested: Vec<String>,
    /// Events GitHub refused to redeliver; not asked again either.
    pub refused: Vec<String>,
    /// Events whose request failed (GitHub down, rate limit): asked again
    /// by the next pass.
    pub failed: Vec<String>,
}

/// One attempt in GitHub's log (`hook-delivery-item`); other fields are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LoggedAttempt {
    /// The attempt's own id, which a redelivery request names.
    pub id: i64,
    /// The event's id, shared by all its attempts: `X-GitHub-Delivery`.
    pub guid: String,
    pub delivered_at: DateTime<Utc>,
    /// What Roster answered; 0 when GitHub could not reach it.
    #[serde(default)]
    pub status_code: i64,
    pub event: String,
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub repository_id: Option<i64>,
}

impl LoggedAttempt {
    fn succeeded(&self) -> bool {
        (200..300).contains(&self.status_code)
    }
}

/// Runs a pass at start and then about every `every`, on whichever replica
/// takes the turn, until `stop` resolves. Failures are logged and left to
/// the next pass; nothing here ends the process.
pub async fn run_redelivery_loop(
    source: GithubSource,
    pool: PgPool,
    every: Duration,
    stop: impl Future<Output = ()>,
) {
    let every = every.max(Duration::from_secs(1));
    // Checking the turn a few times per period keeps the period close to
    // `every` without two replicas sharing it.
    let tick = (every / 4).max(Duration::from_millis(250));
    let mut gap = START_GAP.min(every);
    tokio::pin!(stop);
    loop {
        let turn = async {
            match take_turn(&pool, gap).await {
                Ok(true) => {
                    report(recover_missed(&source, &pool).await);
                    true
                }
                Ok(false) => true,
                Err(error) => {
                    tracing::warn!(%error, "could not take the redelivery turn");
                    false
                }
            }
        };
        tokio::select! {
            () = &mut stop => return,
            asked = turn => if asked { gap = every },
        }
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(tick) => {}
        }
    }
}

fn report(result: Result<Pass, RedeliveryError>) {
    match result {
        Ok(pass)
            if pass.requested.is_empty() && pass.refused.is_empty() && pass.failed.is_empty() =>
        {
            tracing::debug!(read = pass.read, "no missed webhook deliveries")
        }
        Ok(pass) => tracing::info!(
            read = pass.read,
            requested = pass.requested.len(),
            refused = pass.refused.len(),
            failed = pass.failed.len(),
            "asked GitHub to redeliver missed webhook deliveries"
        ),
        Err(error) => tracing::warn!(%error, "missed webhook deliveries not recovered this time"),
    }
}

/// Takes this replica's turn to read the log when nobody started a pass
/// within `gap`; true when taken. Concurrent callers wait on the row lock
/// and re-check against the winner's update, so exactly one gets it.
pub async fn take_turn(pool: &PgPool, gap: Duration) -> Result<bool, sqlx::Error> {
    let taken = sqlx::query(
        "update redelivery_schedule set last_started_at = now()
         where last_started_at <= now() - make_interval(secs => $1)",
    )
    .bind(gap.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(taken.rows_affected() == 1)
}

/// One pass: reads the log of the last 3 days and asks GitHub to redeliver
/// each event that no attempt delivered and that Roster has neither
/// received nor asked for, recording every request.
pub async fn recover_missed(source: &GithubSource, pool: &PgPool) -> Result<Pass, RedeliveryError> {
    let since = Utc::now() - chrono::Duration::from_std(WINDOW).unwrap_or_default();
    let attempts = read_log(source, since).await?;
    let read = attempts.len();
    let mut candidates = missed(attempts);
    let guids: Vec<String> = candidates.iter().map(|a| a.guid.clone()).collect();
    let known = deliveries::known(pool, &guids).await?;
    candidates.retain(|a| !known.contains(&a.guid));

    let mut pass = Pass {
        read,
        ..Pass::default()
    };
    let mut pending = candidates.into_iter();
    while let Some(attempt) = pending.next() {
        match ask(source, &attempt).await {
            Asked::Requested => {
                mark(source, pool, &attempt, OUTCOME_REQUESTED).await?;
                pass.requested.push(attempt.guid);
            }
            Asked::Refused(message) => {
                tracing::warn!(delivery = %attempt.guid, %message, "GitHub refused a redelivery");
                mark(source, pool, &attempt, OUTCOME_REFUSED).await?;
                pass.refused.push(attempt.guid);
            }
            Asked::Failed(message) => {
                tracing::warn!(delivery = %attempt.guid, %message, "could not ask for a redelivery");
                pass.failed.push(attempt.guid);
            }
            Asked::Stop(message) => {
                tracing::warn!(%message, "asking for redeliveries stopped until the next pass");
                pass.failed.push(attempt.guid);
                pass.failed.extend(pending.by_ref().map(|a| a.guid));
            }
        }
    }
    Ok(pass)
}

/// The newest attempt of each event that no attempt delivered, oldest
/// event first. Attempts of one event may span pages: decide after all.
pub fn missed(attempts: Vec<LoggedAttempt>) -> Vec<LoggedAttempt> {
    let mut delivered: HashSet<String> = HashSet::new();
    let mut newest: HashMap<String, LoggedAttempt> = HashMap::new();
    for attempt in attempts {
        if attempt.succeeded() {
            delivered.insert(attempt.guid.clone());
            continue;
        }
        let newer = newest
            .get(&attempt.guid)
            .is_none_or(|n| (attempt.delivered_at, attempt.id) > (n.delivered_at, n.id));
        if newer {
            newest.insert(attempt.guid.clone(), attempt);
        }
    }
    let mut missed: Vec<LoggedAttempt> = newest
        .into_values()
        .filter(|a| !delivered.contains(&a.guid))
        .collect();
    missed.sort_by_key(|a| (a.delivered_at, a.id));
    missed
}

/// The attempts delivered at or after `since`, following `Link` pages until
/// older attempts show up (the log is newest first).
async fn read_log(
    source: &GithubSource,
    since: DateTime<Utc>,
) -> Result<Vec<LoggedAttempt>, RedeliveryError> {
    let mut first = source
        .api_url(["app", "hook", "deliveries"])
        .map_err(RedeliveryError::Log)?;
    first.query_pairs_mut().append_pair("per_page", PER_PAGE);
    let origin = first.origin();
    let mut next = Some(first);
    let mut attempts = Vec::new();
    let mut pages = 0;
    while let Some(url) = next.take() {
        pages += 1;
        let reply = source
            .app_request(Method::GET, url, None)
            .await
            .map_err(RedeliveryError::Log)?;
        if reply.status != 200 {
            return Err(RedeliveryError::LogRefused {
                status: reply.status,
                message: reply.message(),
            });
        }
        let page: Vec<LoggedAttempt> =
            serde_json::from_str(&reply.body).map_err(RedeliveryError::LogUnreadable)?;
        let reached_the_end = page.iter().any(|a| a.delivered_at < since);
        attempts.extend(page.into_iter().filter(|a| a.delivered_at >= since));
        if reached_the_end {
            break;
        }
        if pages >= MAX_PAGES {
            tracing::warn!(
                pages,
                "the webhook delivery log is longer than one pass reads"
            );
            break;
        }
        next = match reply.header("link").and_then(next_link) {
            None => None,
            Some(link) => Some(same_origin(&link, &origin)?),
        };
    }
    Ok(attempts)
}

/// The next page's URL, refused unless it is on the API's host: the App's
/// credentials go nowhere else.
fn same_origin(link: &str, origin: &url::Origin) -> Result<Url, RedeliveryError> {
    let url = Url::parse(link).map_err(|_| RedeliveryError::LogNextPage("is not a URL"))?;
    if &url.origin() != origin {
        return Err(RedeliveryError::LogNextPage("is on another host"));
    }
    Ok(url)
}

/// How GitHub took a redelivery request.
enum Asked {
    /// Accepted (202): the redelivery is on its way.
    Requested,
    /// A definite no for this delivery (gone, too old): do not ask again.
    Refused(String),
    /// This request failed; ask again next pass.
    Failed(String),
    /// Every request would fail now (rate limit, credentials): stop the pass.
    Stop(String),
}

async fn ask(source: &GithubSource, attempt: &LoggedAttempt) -> Asked {
    let id = attempt.id.to_string();
    let url = match source.api_url(["app", "hook", "deliveries", id.as_str(), "attempts"]) {
        Ok(url) => url,
        Err(failure) => return Asked::Stop(failure.message()),
    };
    match source.app_request(Method::POST, url, None).await {
        Ok(reply) if (200..300).contains(&reply.status) => Asked::Requested,
        Ok(reply) if matches!(reply.status, 404 | 410 | 422) => {
            Asked::Refused(format!("{}: {}", reply.status, reply.message()))
        }
        Ok(reply) if matches!(reply.status, 401 | 403) => {
            Asked::Stop(format!("{}: {}", reply.status, reply.message()))
        }
        Ok(reply) => Asked::Failed(format!("{}: {}", reply.status, reply.message())),
        Err(failure) if failure.retry_after.is_some() => Asked::Stop(failure.message()),
        Err(failure) => Asked::Failed(failure.message()),
    }
}

/// Records that Roster asked for `attempt`'s event, naming its repository
/// as the registry knows it.
async fn mark(
    source: &GithubSource,
    pool: &PgPool,
    attempt: &LoggedAttempt,
    outcome: &str,
) -> Result<(), RedeliveryError> {
    let repo = match attempt.repository_id {
        Some(id) => source.registry().full_name(RepoId(id)).await?,
        None => None,
    };
    let asked = NewDelivery {
        id: &attempt.guid,
        event: &attempt.event,
        action: attempt.action.as_deref(),
        repo: repo.as_deref(),
        outcome,
    };
    deliveries::record_redelivery_request(pool, &asked).await?;
    Ok(())
}

#[cfg(test)]
mod tests;
