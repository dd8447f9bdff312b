//! Reading the change log: the feed after a cursor, one name's history,
//! and the entries removed most recently.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgExecutor, PgPool};

use super::{ChangeJson, ChangeKind};
use crate::registry::RegistryError;
use crate::source::RepoId;

/// Most changes one read answers.
pub const MAX_FEED_LIMIT: i64 = 1000;

/// A page of the feed: the changes after the asked `seq`, oldest first, and
/// the cursor to ask with next (the last `seq` here, or the asked one when
/// nothing is new).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Feed {
    pub items: Vec<ChangeJson>,
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

#[derive(sqlx::FromRow)]
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
}

impl ChangeRow {
    fn into_json(self) -> Result<ChangeJson, RegistryError> {
        let kind = ChangeKind::parse(&self.kind).ok_or_else(|| {
            sqlx::Error::Decode(format!("unknown change kind {:?}", self.kind).into())
        })?;
        Ok(ChangeJson {
            seq: self.seq,
            at: self.at,
            kind,
            name: self.name,
            repo: self.repo,
            repo_id: RepoId(self.repo_id),
            sha: self.sha,
            cause: self.cause,
            before: self.before,
            after: self.after,
        })
    }
}

pub(super) const COLUMNS: &str = "seq, at, kind, name, repo, repo_id, sha, cause, before, after";

pub(super) fn into_json(rows: Vec<ChangeRow>) -> Result<Vec<ChangeJson>, RegistryError> {
    rows.into_iter().map(ChangeRow::into_json).collect()
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
    let rows: Vec<ChangeRow> = sqlx::query_as(&format!(
        "select {COLUMNS} from changes where seq > $1 order by seq limit $2"
    ))
    .bind(after)
    .bind(limit.clamp(1, MAX_FEED_LIMIT))
    .fetch_all(pool)
    .await
    .map_err(RegistryError::from)?;
    let oldest = oldest_kept(pool).await?;
    if after < oldest - 1 {
        return Err(FeedError::Gone { after, oldest });
    }
    let items = into_json(rows)?;
    let next_cursor = items.last().map_or(after, |c| c.seq);
    Ok(Feed { items, next_cursor })
}

/// One name's changes, newest first, those before `before_seq` when given
/// (the next page), at most `limit`. Kept after the entry was removed.
pub async fn history(
    pool: &PgPool,
    name: &str,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<Vec<ChangeJson>, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&format!(
        "select {COLUMNS} from changes
         where name = $1 and ($2::bigint is null or seq < $2)
         order by seq desc limit $3"
    ))
    .bind(name)
    .bind(before_seq)
    .bind(limit.clamp(1, MAX_FEED_LIMIT))
    .fetch_all(pool)
    .await?;
    into_json(rows)
}

/// The latest removals whose name has not come back since, newest first:
/// each carries the entry's last version in `before`.
pub async fn recently_removed(pool: &PgPool, limit: i64) -> Result<Vec<ChangeJson>, RegistryError> {
    let rows: Vec<ChangeRow> = sqlx::query_as(&format!(
        "select {COLUMNS} from changes c
         where kind = 'removed'
           and not exists (select 1 from changes n where n.name = c.name and n.seq > c.seq)
         order by seq desc limit $1"
    ))
    .bind(limit.clamp(1, MAX_FEED_LIMIT))
    .fetch_all(pool)
    .await?;
    into_json(rows)
}
