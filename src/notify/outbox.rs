//! The outbox of notifications: the change log itself, and one cursor per
//! target saying how far the target acknowledged it. A lease on the
//! target's row decides which replica delivers to it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// Where a target stands, as the replica holding its lease sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Leased {
    /// Every change up to this `seq` was acknowledged.
    pub cursor: i64,
    /// Failed attempts in a row at the change after `cursor`.
    pub attempts: u32,
    /// How long the backoff still holds the next attempt back.
    pub wait: Duration,
    /// The last `seq` written to the log.
    pub head: i64,
}

impl Leased {
    /// Changes written but not acknowledged yet.
    pub fn backlog(&self) -> i64 {
        (self.head - self.cursor).max(0)
    }
}

/// Adds a target that is not known yet; it starts at the head of the log
/// (it receives the changes written from now on).
pub async fn register(pool: &PgPool, url: &str) -> Result<(), sqlx::Error> {
    // The head only grows: a change written between the two statements is
    // after the cursor, so it is sent.
    let head = crate::registry::changes::head(pool).await?;
    sqlx::query(
        "insert into notify_targets (url, cursor) values ($1, $2)
         on conflict (url) do nothing",
    )
    .bind(url)
    .bind(head)
    .execute(pool)
    .await?;
    Ok(())
}

/// Drops every target that is not in `urls` (it was removed from the
/// configuration), and with it its backlog: nothing is kept or counted for
/// it any more. Returns how many were dropped.
pub async fn forget_others(pool: &PgPool, urls: &[String]) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("delete from notify_targets where url <> all($1)")
        .bind(urls)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// `url`'s backlog as the table has it (`None` when it is not known).
pub async fn backlog(pool: &PgPool, url: &str) -> Result<Option<i64>, sqlx::Error> {
    let head = crate::registry::changes::head(pool).await?;
    sqlx::query_scalar("select greatest($2 - cursor, 0) from notify_targets where url = $1")
        .bind(url)
        .bind(head)
        .fetch_optional(pool)
        .await
}

/// Takes or renews the lease on `url` for `owner`; `None` while another
/// replica holds a live lease.
pub async fn acquire(
    pool: &PgPool,
    url: &str,
    owner: &str,
    lease: Duration,
) -> Result<Option<Leased>, sqlx::Error> {
    let row: Option<(i64, i32, f64)> = sqlx::query_as(
        "update notify_targets
         set lease_owner = $2, lease_until = clock_timestamp() + make_interval(secs => $3)
         where url = $1
           and (lease_owner = $2 or lease_until is null or lease_until < clock_timestamp())
         returning cursor, attempts,
             greatest(0, coalesce(extract(epoch from next_attempt_at - clock_timestamp()), 0))::float8",
    )
    .bind(url)
    .bind(owner)
    .bind(lease.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    let Some((cursor, attempts, wait)) = row else {
        return Ok(None);
    };
    let head = crate::registry::changes::head(pool).await?;
    Ok(Some(Leased {
        cursor,
        attempts: u32::try_from(attempts).unwrap_or(0),
        wait: Duration::from_secs_f64(wait.clamp(0.0, 86_400.0)),
        head,
    }))
}

/// Records that the target acknowledged everything up to `seq`, and renews
/// the lease. `false` when the lease was lost (another replica delivers
/// now; the cursor is left to it).
pub async fn advance(
    pool: &PgPool,
    url: &str,
    owner: &str,
    seq: i64,
    lease: Duration,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "update notify_targets
         set cursor = greatest(cursor, $3), attempts = 0, next_attempt_at = null,
             last_sent_at = clock_timestamp(),
             lease_until = clock_timestamp() + make_interval(secs => $4)
         where url = $1 and lease_owner = $2 and lease_until > clock_timestamp()",
    )
    .bind(url)
    .bind(owner)
    .bind(seq)
    .bind(lease.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Records a failed attempt: its error, and when to try again.
pub async fn fail(
    pool: &PgPool,
    url: &str,
    owner: &str,
    error: &str,
    retry_in: Duration,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update notify_targets
         set attempts = attempts + 1, last_error = $3, last_error_at = clock_timestamp(),
             next_attempt_at = clock_timestamp() + make_interval(secs => $4)
         where url = $1 and lease_owner = $2",
    )
    .bind(url)
    .bind(owner)
    .bind(error)
    .bind(retry_in.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Moves a target that fell behind retention to what is still kept, and
/// says so in its last error.
pub async fn skip_to(
    pool: &PgPool,
    url: &str,
    owner: &str,
    cursor: i64,
    error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update notify_targets
         set cursor = greatest(cursor, $3), last_error = $4, last_error_at = clock_timestamp()
         where url = $1 and lease_owner = $2",
    )
    .bind(url)
    .bind(owner)
    .bind(cursor)
    .bind(error)
    .execute(pool)
    .await?;
    Ok(())
}

/// Gives the lease up (at shutdown), so another replica takes over at once.
pub async fn release(pool: &PgPool, url: &str, owner: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update notify_targets set lease_owner = null, lease_until = null
         where url = $1 and lease_owner = $2",
    )
    .bind(url)
    .bind(owner)
    .execute(pool)
    .await?;
    Ok(())
}

crate::row! {
    /// One target as the API and the dashboard show it.
    #[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
    pub struct TargetStatus {
        /// The URL's scheme, host and port (see [`super::labels`]).
        pub target: String,
        /// Changes written but not acknowledged yet.
        pub backlog: i64,
        pub cursor: i64,
        pub attempts: i32,
        pub last_error: Option<String>,
        pub last_error_at: Option<DateTime<Utc>>,
        pub last_sent_at: Option<DateTime<Utc>>,
        pub next_attempt_at: Option<DateTime<Utc>>,
        /// Whether a replica delivers to it now (a live lease).
        pub active: bool,
        /// Whether it fell more than the log's size bound behind and has not
        /// acknowledged its `gap` notification yet.
        pub stalled: bool,
    }
}

/// Every configured target (those removed from the configuration are
/// dropped at start), by URL.
pub async fn status(pool: &PgPool) -> Result<Vec<TargetStatus>, sqlx::Error> {
    let head = crate::registry::changes::head(pool).await?;
    let mut rows: Vec<TargetStatus> = sqlx::query_as(
        "select t.url as target, greatest($1 - t.cursor, 0) as backlog, t.cursor, t.attempts,
                t.last_error, t.last_error_at, t.last_sent_at, t.next_attempt_at,
                coalesce(t.lease_until > clock_timestamp(), false) as active,
                t.gap_first is not null as stalled
         from notify_targets t
         order by t.url",
    )
    .bind(head)
    .fetch_all(pool)
    .await?;
    let urls: Vec<String> = rows.iter().map(|r| r.target.clone()).collect();
    for (row, label) in rows.iter_mut().zip(super::labels(&urls)) {
        row.target = label;
    }
    Ok(rows)
}
