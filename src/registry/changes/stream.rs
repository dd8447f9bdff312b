//! The organisation's change stream as the dashboard pages through it:
//! newest first, narrowed by kind, cause and owner.

use sqlx::PgPool;

use super::read::{into_json, ChangeRow, COLUMNS, MAX_FEED_LIMIT};
use super::{ChangeJson, ChangeKind};
use crate::registry::RegistryError;

/// Which changes to show; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamFilter {
    pub kind: Option<ChangeKind>,
    /// A cause as stored (`push`, `listing`, `repo_removed`, …).
    pub cause: Option<String>,
    /// The entry's owner before or after the change, so that a change
    /// handing an entry from one team to another shows for both.
    pub owner: Option<String>,
    /// Only changes older than this `seq` (the next page).
    pub before: Option<i64>,
    pub limit: i64,
}

/// The changes `filter` lets through, newest first, at most its limit
/// (1 to [`MAX_FEED_LIMIT`]). Walks the log by `seq` from the newest (or
/// from `before`), so a page costs what it shows plus what the filter
/// skips, and a change committed meanwhile never shifts the next page.
pub async fn stream(
    pool: &PgPool,
    filter: &StreamFilter,
) -> Result<Vec<ChangeJson>, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&format!(
        "select {COLUMNS} from changes
         where ($1::bigint is null or seq < $1)
           and ($2::text is null or kind = $2)
           and ($3::text is null or cause = $3)
           and ($4::text is null or after->>'owner' = $4 or before->>'owner' = $4)
         order by seq desc limit $5"
    ))
    .bind(filter.before)
    .bind(filter.kind.map(ChangeKind::as_str))
    .bind(filter.cause.as_deref())
    .bind(filter.owner.as_deref())
    .bind(filter.limit.clamp(1, MAX_FEED_LIMIT))
    .fetch_all(pool)
    .await?;
    into_json(rows)
}
