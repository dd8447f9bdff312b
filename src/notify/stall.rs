//! Targets that fell too far behind: a target that has more than
//! `ROSTER_HISTORY_MAX_BYTES` of changes left to receive would hold the
//! whole log back, so it is marked stalled, its backlog is dropped (its
//! cursor moves to the head) and the `seq`s it missed wait to be announced
//! in one `gap` notification (see docs/operations.md, "Notifications").

use sqlx::PgPool;

use crate::registry::changes;

/// A target just marked stalled, and what it missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled {
    /// The URL without credentials.
    pub target: String,
    pub first_seq: i64,
    pub last_seq: i64,
}

/// Marks every target with more than `max_bytes` of changes after its
/// cursor as stalled: its cursor moves to the head, and the gap (added to
/// one not yet announced) waits for the delivery task. Returns them.
pub async fn stall_behind(pool: &PgPool, max_bytes: u64) -> Result<Vec<Stalled>, sqlx::Error> {
    let head = changes::head(pool).await?;
    let behind: Vec<(String, i64)> =
        sqlx::query_as("select url, cursor from notify_targets where cursor < $1")
            .bind(head)
            .fetch_all(pool)
            .await?;
    let max = i64::try_from(max_bytes).unwrap_or(i64::MAX);
    let mut stalled = Vec::new();
    for (url, cursor) in behind {
        if changes::prune::bytes_after(pool, cursor).await? <= max {
            continue;
        }
        // Only if the cursor did not move meanwhile (a delivery caught up).
        let gap: Option<(i64, i64)> = sqlx::query_as(
            "update notify_targets
             set stalled_at = clock_timestamp(),
                 gap_first = coalesce(gap_first, cursor + 1),
                 gap_last = $3,
                 cursor = $3,
                 attempts = 0,
                 next_attempt_at = null,
                 last_error = format(
                     'fell more than %s bytes of changes behind: seq %s to %s dropped',
                     $4::bigint, coalesce(gap_first, cursor + 1), $3::bigint),
                 last_error_at = clock_timestamp()
             where url = $1 and cursor = $2
             returning gap_first, gap_last",
        )
        .bind(&url)
        .bind(cursor)
        .bind(head)
        .bind(max)
        .fetch_optional(pool)
        .await?;
        if let Some((first_seq, last_seq)) = gap {
            stalled.push(Stalled {
                target: super::redact(&url),
                first_seq,
                last_seq,
            });
        }
    }
    Ok(stalled)
}

/// The smallest cursor of the targets: the changes after it are still
/// needed by one of them (`None` without targets). Cursors only move
/// forward, so a value read earlier keeps at least what is needed.
pub async fn needed_after(pool: &PgPool) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("select min(cursor) from notify_targets")
        .fetch_one(pool)
        .await
}

/// The `gap` notification's body: the first and last `seq` the target
/// missed, read the registry afresh to catch up.
pub fn gap_body(first_seq: i64, last_seq: i64, at: chrono::DateTime<chrono::Utc>) -> String {
    serde_json::json!({
        "kind": "gap",
        "first_seq": first_seq,
        "last_seq": last_seq,
        "at": at,
    })
    .to_string()
}

/// Records that the target acknowledged its `gap` notification: it is no
/// longer stalled. `false` when the lease was lost.
pub async fn gap_delivered(pool: &PgPool, url: &str, owner: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "update notify_targets
         set gap_first = null, gap_last = null, stalled_at = null, attempts = 0,
             next_attempt_at = null, last_sent_at = clock_timestamp()
         where url = $1 and lease_owner = $2 and lease_until > clock_timestamp()",
    )
    .bind(url)
    .bind(owner)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The gap a target has still to be told about, if any.
pub async fn pending_gap(pool: &PgPool, url: &str) -> Result<Option<(i64, i64)>, sqlx::Error> {
    let row: Option<(Option<i64>, Option<i64>)> =
        sqlx::query_as("select gap_first, gap_last from notify_targets where url = $1")
            .bind(url)
            .fetch_optional(pool)
            .await?;
    Ok(row.and_then(|(first, last)| first.zip(last)))
}
