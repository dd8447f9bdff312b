//! The delivery log: one row per `X-GitHub-Delivery` that passed the
//! signature check, for the dashboard and `GET /api/v1/deliveries`.

use std::collections::HashSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, PgPool};

use crate::db::Page;

/// The most items one page holds (docs/contract.md#http-routes).
pub const MAX_LIMIT: u32 = 1000;

crate::row! {
    /// One recorded delivery.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct DeliveryRecord {
        /// GitHub's `X-GitHub-Delivery`.
        pub id: String,
        pub event: String,
        pub action: Option<String>,
        /// `owner/name`, when the payload names a repository.
        pub repo: Option<String>,
        pub outcome: String,
        pub at: DateTime<Utc>,
        pub redelivery_requested: bool,
    }
}

/// A delivery about to be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    pub id: &'a str,
    pub event: &'a str,
    pub action: Option<&'a str>,
    pub repo: Option<&'a str>,
    pub outcome: &'a str,
}

/// Why the delivery log could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DeliveriesError {
    /// The caller's cursor did not come from a previous page (answer 400).
    #[error("invalid cursor")]
    InvalidCursor,
    #[error("deliveries: {0}")]
    Database(#[from] sqlx::Error),
}

/// Records a delivery. A redelivered id only refreshes its outcome and time:
/// the first row stays, so a redelivery is harmless. It runs on a pool, or on
/// a transaction's connection so a delivery's record commits with its effects.
pub async fn record<'e, E>(executor: E, delivery: &NewDelivery<'_>) -> Result<(), DeliveriesError>
where
    E: PgExecutor<'e>,
{
    sqlx::query(
        "insert into deliveries (id, event, action, repo, outcome) values ($1, $2, $3, $4, $5)
         on conflict (id) do update set outcome = excluded.outcome, at = now()",
    )
    .bind(delivery.id)
    .bind(delivery.event)
    .bind(delivery.action)
    .bind(delivery.repo)
    .bind(delivery.outcome)
    .execute(executor)
    .await?;
    Ok(())
}

/// Records the answered `deliveries` in one statement, as [`record`] would
/// one by one (an id given twice keeps its last outcome), committed without
/// waiting for the disk: they are already answered, so the wait would only
/// hold up the next batch ([`super::delivery_writer`]).
///
/// Most batches hold only new ids (GitHub's redeliveries are rare), so a
/// plain insert is tried first: it costs about a fifth less than an upsert,
/// which must mark each row as it goes. A batch that holds a logged id
/// fails as a whole and is written again as the upsert.
pub async fn record_answered(
    pool: &PgPool,
    deliveries: &[NewDelivery<'_>],
) -> Result<(), DeliveriesError> {
    // One row per id (a statement may not update a row twice; the last one
    // wins), in id order so that concurrent writers lock in one order.
    let unique: std::collections::BTreeMap<&str, &NewDelivery<'_>> =
        deliveries.iter().map(|d| (d.id, d)).collect();
    let ids: Vec<&str> = unique.keys().copied().collect();
    let events: Vec<&str> = unique.values().map(|d| d.event).collect();
    let actions: Vec<Option<&str>> = unique.values().map(|d| d.action).collect();
    let repos: Vec<Option<&str>> = unique.values().map(|d| d.repo).collect();
    let outcomes: Vec<&str> = unique.values().map(|d| d.outcome).collect();
    let rows = |sql| {
        sqlx::query(sql)
            .bind(&ids)
            .bind(&events)
            .bind(&actions)
            .bind(&repos)
            .bind(&outcomes)
    };
    match rows(INSERT_ANSWERED).execute(pool).await {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            rows(UPSERT_ANSWERED).execute(pool).await?;
        }
        inserted => {
            inserted?;
        }
    }
    Ok(())
}

/// The rows of [`record_answered`], committed without waiting for the disk.
const INSERT_ANSWERED: &str = "insert into deliveries (id, event, action, repo, outcome)
     select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
     where (select set_config('synchronous_commit', 'off', true)) = 'off'";

/// [`INSERT_ANSWERED`] for a batch that names a logged id.
const UPSERT_ANSWERED: &str = "insert into deliveries (id, event, action, repo, outcome)
     select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
     where (select set_config('synchronous_commit', 'off', true)) = 'off'
     on conflict (id) do update set outcome = excluded.outcome, at = now()";

/// Which of the delivery ids `ids` the log holds (received, or asked for).
pub async fn known(pool: &PgPool, ids: &[String]) -> Result<HashSet<String>, DeliveriesError> {
    let known: Vec<String> = sqlx::query_scalar("select id from deliveries where id = any($1)")
        .bind(ids)
        .fetch_all(pool)
        .await?;
    Ok(known.into_iter().collect())
}

/// Records that Roster asked GitHub to redeliver `delivery`, marked
/// `redelivery_requested`. A row already there (the redelivery won the
/// race) keeps its outcome and gains the mark.
pub async fn record_redelivery_request(
    pool: &PgPool,
    delivery: &NewDelivery<'_>,
) -> Result<(), DeliveriesError> {
    sqlx::query(
        "insert into deliveries (id, event, action, repo, outcome, redelivery_requested)
         values ($1, $2, $3, $4, $5, true)
         on conflict (id) do update set redelivery_requested = true",
    )
    .bind(delivery.id)
    .bind(delivery.event)
    .bind(delivery.action)
    .bind(delivery.repo)
    .bind(delivery.outcome)
    .execute(pool)
    .await?;
    Ok(())
}

/// Lists deliveries newest first, `limit` per page (clamped to 1..=1000),
/// after `cursor` (from a previous page), only those of `repo` (`owner/name`)
/// when given.
pub async fn list_deliveries(
    pool: &PgPool,
    limit: u32,
    cursor: Option<&str>,
    repo: Option<&str>,
) -> Result<Page<DeliveryRecord>, DeliveriesError> {
    let limit = limit.clamp(1, MAX_LIMIT);
    let after = cursor.map(decode_cursor).transpose()?;
    let (after_at, after_id) = after.unzip();
    let mut items: Vec<DeliveryRecord> = sqlx::query_as(
        "select id, event, action, repo, outcome, at, redelivery_requested
         from deliveries
         where ($1::text is null or repo = $1)
           and ($2::timestamptz is null or (at, id) < ($2, $3::text))
         order by at desc, id desc
         limit $4",
    )
    .bind(repo)
    .bind(after_at)
    .bind(after_id)
    .bind(i64::from(limit) + 1)
    .fetch_all(pool)
    .await?;
    let next_cursor = if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(|last| encode_cursor(last.at, &last.id))
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

fn encode_cursor(at: DateTime<Utc>, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}:{id}", at.timestamp_micros()))
}

fn decode_cursor(cursor: &str) -> Result<(DateTime<Utc>, String), DeliveriesError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| DeliveriesError::InvalidCursor)?;
    let text = String::from_utf8(bytes).map_err(|_| DeliveriesError::InvalidCursor)?;
    let (micros, id) = text.split_once(':').ok_or(DeliveriesError::InvalidCursor)?;
    let micros: i64 = micros.parse().map_err(|_| DeliveriesError::InvalidCursor)?;
    let at = DateTime::from_timestamp_micros(micros).ok_or(DeliveriesError::InvalidCursor)?;
    Ok((at, id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_should_round_trip_time_and_id() {
        let at = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap_or_default();
        let cursor = encode_cursor(at, "72d3162e-cc78-11e3:81e7");
        let decoded = decode_cursor(&cursor).ok();
        assert_eq!(decoded, Some((at, "72d3162e-cc78-11e3:81e7".to_owned())));
    }

    #[test]
    fn cursor_that_was_not_issued_should_be_refused() {
        for bad in ["", "!!!", "bm90LWEtbnVtYmVyOmlk", "MTIz"] {
            assert!(
                matches!(decode_cursor(bad), Err(DeliveriesError::InvalidCursor)),
                "{bad}"
            );
        }
    }
}
