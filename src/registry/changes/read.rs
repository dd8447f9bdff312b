//! Reading the change log: the feed after a cursor, one name's history,
//! and the entries removed most recently.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgExecutor, PgPool};

use super::{Change, ChangeKind, RemovedDependents};
use crate::registry::budget;
use crate::registry::{Entry, RegistryError};
use crate::source::RepoId;

/// Most changes one read answers.
pub const MAX_FEED_LIMIT: i64 = 1000;

/// A page of the feed: the changes after the asked `seq`, oldest first, and
/// the cursor to ask with next (the last `seq` here, or the asked one when
/// nothing is new).
#[derive(Debug, Clone, PartialEq)]
pub struct Feed {
    pub items: Vec<Change>,
    pub next_cursor: i64,
}

/// Why the feed cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// Changes after the asked `seq` were pruned: the reader must read the
    /// registry afresh and continue from `oldest - 1`.
    #[error("changes after {after} are no longer kept; the oldest kept is {oldest}")]
    Gone { after: i64, oldest: i64 },
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

crate::row! {
    pub(super) struct ChangeRow {
        seq: i64,
        at: DateTime<Utc>,
        kind: String,
        name: String,
        repo: String,
        repo_id: i64,
        sha: Option<String>,
        cause: String,
        before: Option<Value>,
        after: Option<Value>,
        dependents: Option<Vec<String>>,
        dependents_total: Option<i32>,
        /// How many changes matched before the byte bound cut the page.
        matched: i64,
    }
}

impl ChangeRow {
    fn into_change(self) -> Result<Change, RegistryError> {
        let kind = ChangeKind::parse(&self.kind).ok_or_else(|| {
            sqlx::Error::Decode(format!("unknown change kind {:?}", self.kind).into())
        })?;
        let before = match kind {
            ChangeKind::Changed => Some(super::patch::restore(
                self.after.as_ref(),
                self.before.as_ref(),
            )),
            _ => self.before,
        };
        let seq = self.seq;
        let entry = |stored: Option<Value>| -> Result<Option<Entry>, RegistryError> {
            stored.map(serde_json::from_value).transpose().map_err(|e| {
                sqlx::Error::Decode(
                    format!("change {seq}: an entry that does not read: {e}").into(),
                )
                .into()
            })
        };
        Ok(Change {
            seq: self.seq,
            at: self.at,
            kind,
            name: self.name,
            repo: self.repo,
            repo_id: RepoId(self.repo_id),
            sha: self.sha,
            cause: self.cause,
            before: entry(before)?,
            after: entry(self.after)?,
            dependents: self.dependents.map(|names| RemovedDependents {
                total: self
                    .dependents_total
                    .and_then(|t| usize::try_from(t).ok())
                    .unwrap_or(names.len()),
                names,
            }),
        })
    }
}

/// A page of changes within the byte bound by their stored sizes, and
/// whether more matched. The stored sizes are close, not exact: what shows
/// the page cuts it to the exact bound of its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub items: Vec<Change>,
    /// Whether changes beyond the last of `items` matched (the page was
    /// full, or cut by its size).
    pub more: bool,
}

const COLUMNS: &str = "c.seq, c.at, c.kind, c.name, c.repo, c.repo_id, c.sha, c.cause, \
                       c.before, c.after, c.dependents, c.dependents_total";

/// The changes matching `filter` (on `changes c`) in `order` (`asc` or
/// `desc` by `seq`), at most `limit`, and no more than the byte bound
/// holds by their `shown_bytes` (at least one): one statement, so one
/// snapshot. `$1`, `$2` are `limit` and the byte budget; `binds` follow.
pub(super) fn page_query(filter: &str, order: &str) -> String {
    format!(
        "with matched as (
             select c.seq, c.shown_bytes from changes c where {filter}
             order by c.seq {order} limit $1 + 1),
         running as (
             select seq, row_number() over w as n, sum(shown_bytes) over w as used
             from matched window w as (order by seq {order})),
         page as (select seq from running where n <= $1 and (n = 1 or used <= $2))
         select {COLUMNS}, (select count(*) from matched) as matched
         from changes c where c.seq in (select seq from page)
         order by c.seq {order}"
    )
}

/// Decodes a page.
pub(super) fn listed(rows: Vec<ChangeRow>) -> Result<Listed, RegistryError> {
    let matched = rows.first().map_or(0, |r| r.matched);
    let items: Vec<Change> = rows
        .into_iter()
        .map(ChangeRow::into_change)
        .collect::<Result<_, _>>()?;
    let more = usize::try_from(matched).unwrap_or(0) > items.len();
    Ok(Listed { items, more })
}

pub(super) fn budget_bind() -> i64 {
    i64::try_from(budget::ITEMS_BUDGET).unwrap_or(i64::MAX)
}

/// The last `seq` written (0 before the first change): where a new
/// reader of the log starts, and what a reader's backlog is measured to.
pub async fn head<'c>(conn: impl PgExecutor<'c>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select seq from change_head")
        .fetch_one(conn)
        .await
}

/// The smallest `seq` still kept, or the next one to be written when the
/// log is empty. Seqs start at 1 and never skip, so nothing was pruned
/// while this is 1.
pub async fn oldest_kept<'c>(conn: impl PgExecutor<'c>) -> Result<i64, RegistryError> {
    Ok(sqlx::query_scalar(
        "select coalesce((select min(seq) from changes), (select seq + 1 from change_head))",
    )
    .fetch_one(conn)
    .await?)
}

/// The changes after `after`, oldest first, at most `limit` (1 to
/// [`MAX_FEED_LIMIT`]).
///
/// The page is one statement, so one snapshot: the log commits in `seq`
/// order, so it sees a prefix, never a later change without an earlier
/// one. What is kept is checked *after* the page is read: pruning only
/// removes the oldest changes, so if `after + 1` is still kept then, it was
/// when the page was read, and the page starts right after `after`.
pub async fn changes_after(pool: &PgPool, after: i64, limit: i64) -> Result<Feed, FeedError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&page_query("c.seq > $3", "asc"))
        .bind(limit.clamp(1, MAX_FEED_LIMIT))
        .bind(budget_bind())
        .bind(after)
        .fetch_all(pool)
        .await
        .map_err(RegistryError::from)?;
    let oldest = oldest_kept(pool).await?;
    if after < oldest - 1 {
        return Err(FeedError::Gone { after, oldest });
    }
    let items = listed(rows)?.items;
    let next_cursor = items.last().map_or(after, |c| c.seq);
    Ok(Feed { items, next_cursor })
}

/// One name's changes, newest first, those before `before_seq` when given
/// (the next page), at most `limit` and at most the byte bound. Kept after
/// the entry was removed.
pub async fn history(
    pool: &PgPool,
    name: &str,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<Listed, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&page_query(
        "c.name = $3 and ($4::bigint is null or c.seq < $4)",
        "desc",
    ))
    .bind(limit.clamp(1, MAX_FEED_LIMIT))
    .bind(budget_bind())
    .bind(name)
    .bind(before_seq)
    .fetch_all(pool)
    .await?;
    listed(rows)
}

/// The latest removals whose name has not come back since, newest first,
/// within the byte bound: each carries the entry's last version in `before`.
pub async fn recently_removed(pool: &PgPool, limit: i64) -> Result<Vec<Change>, RegistryError> {
    Ok(removed_before(pool, None, limit).await?.items)
}

/// [`recently_removed`], those before `before_seq` when given (the next page).
pub async fn removed_before(
    pool: &PgPool,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<Listed, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&page_query(
        "c.kind = 'removed' and ($3::bigint is null or c.seq < $3)
         and not exists (select 1 from changes n where n.name = c.name and n.seq > c.seq)",
        "desc",
    ))
    .bind(limit.clamp(1, MAX_FEED_LIMIT))
    .bind(budget_bind())
    .bind(before_seq)
    .fetch_all(pool)
    .await?;
    listed(rows)
}
