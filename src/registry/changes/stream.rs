//! The organisation's change stream as the dashboard pages through it:
//! newest first, narrowed by kind, cause and owner.

use sqlx::PgPool;

use super::read::{budget_bind, listed, page_query, ChangeRow, Listed, MAX_FEED_LIMIT};
use super::ChangeKind;
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
/// (1 to [`MAX_FEED_LIMIT`]) and the byte bound of an answer. Walks the
/// log by `seq` from the newest (or from `before`), so a page costs what
/// it shows plus what the filter skips, and a change committed meanwhile
/// never shifts the next page.
///
/// A changed entry stores only the moved fields in `before`: an owner
/// that did not move is in `after`, one that moved is in both.
pub async fn stream(pool: &PgPool, filter: &StreamFilter) -> Result<Listed, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&page_query(
        "($3::bigint is null or c.seq < $3)
           and ($4::text is null or c.kind = $4)
           and ($5::text is null or c.cause = $5)
           and ($6::text is null or c.after->>'owner' = $6 or c.before->>'owner' = $6)",
        "desc",
    ))
    .bind(filter.limit.clamp(1, MAX_FEED_LIMIT))
    .bind(budget_bind())
    .bind(filter.before)
    .bind(filter.kind.map(ChangeKind::as_str))
    .bind(filter.cause.as_deref())
    .bind(filter.owner.as_deref())
    .fetch_all(pool)
    .await?;
    listed(rows)
}
