//! Holds of the deletion guard (docs/contract.md#repository-statuses, docs/contract.md#http-routes): a hold keeps a partition's
//! repositories from being removed until an operator releases it or the
//! repositories come back.
//!
//! A hold is *active* until it is released (`released_at`) or cleared
//! (`cleared_at`, when no repository is left on it). A partition has at most
//! one active hold; later removals join it.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use std::collections::HashSet;

use super::read_models::ActiveHold;
use super::RegistryError;
use crate::source::{Partition, RepoId};

/// `holds h` is active: neither released nor cleared.
const ACTIVE: &str = "h.released_at is null and h.cleared_at is null";

/// The hold a repository points at, as far as its removal is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoldState {
    /// No hold, or one that was cleared: the guard counts the removal.
    None,
    /// Its removal waits on this hold.
    Active(i64),
    /// An operator released this hold: the removal proceeds uncounted.
    Released(i64),
}

/// Where one repository stands; the caller holds the repository's row lock.
pub(crate) async fn hold_state(
    conn: &mut PgConnection,
    id: RepoId,
) -> Result<HoldState, sqlx::Error> {
    let row: Option<(i64, bool, bool)> = sqlx::query_as(
        "select h.id, h.released_at is not null, h.cleared_at is not null
         from repositories r join holds h on h.id = r.hold_id
         where r.id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        None | Some((_, false, true)) => HoldState::None,
        Some((hold, true, _)) => HoldState::Released(hold),
        Some((hold, false, false)) => HoldState::Active(hold),
    })
}

/// Of `ids`, those whose hold an operator released: their removals go
/// through.
pub(crate) async fn released_among(
    conn: &mut PgConnection,
    ids: &[RepoId],
) -> Result<HashSet<RepoId>, sqlx::Error> {
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    let released: Vec<RepoId> = sqlx::query_scalar(
        "select r.id from repositories r join holds h on h.id = r.hold_id
         where r.id = any($1) and h.released_at is not null",
    )
    .bind(&ids)
    .fetch_all(conn)
    .await?;
    Ok(released.into_iter().collect())
}

/// Takes the partition's lock until the transaction ends: removals of one
/// partition are counted and decided one at a time, across workers and
/// replicas.
pub(crate) async fn lock_partition(
    conn: &mut PgConnection,
    partition: Partition,
) -> Result<(), sqlx::Error> {
    sqlx::query("select pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("roster.deletion-guard/{partition}"))
        .execute(conn)
        .await?;
    Ok(())
}

/// The active hold of a partition, found or just opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenHold {
    pub id: i64,
    /// `false` when the partition already had an active hold (its `since`
    /// and `reason` stay those of the first removal it held).
    pub created: bool,
}

/// How often [`open`] tries again when the hold it found closed under it.
const OPEN_TRIES: usize = 3;

/// Finds the partition's active hold, or opens one with `reason`.
///
/// A hold found (not opened here) is share-locked until the transaction
/// ends, so that it cannot close between now and the caller attaching its
/// repositories: closing takes the row's exclusive lock (see
/// [`clear_empty`]) and then sees them.
pub(crate) async fn open(
    conn: &mut PgConnection,
    partition: Partition,
    reason: &str,
) -> Result<OpenHold, sqlx::Error> {
    for _ in 0..OPEN_TRIES {
        // A concurrent opener makes this wait, then do nothing; the select
        // below (a new snapshot) then sees its hold.
        let created: Option<i64> = sqlx::query_scalar(
            "insert into holds (partition, reason) values ($1, $2)
             on conflict (partition) where released_at is null and cleared_at is null
             do nothing
             returning id",
        )
        .bind(partition)
        .bind(reason)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(id) = created {
            return Ok(OpenHold { id, created: true });
        }
        let found: Option<i64> = sqlx::query_scalar(&format!(
            "select h.id from holds h where h.partition = $1 and {ACTIVE} for share"
        ))
        .bind(partition)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(id) = found {
            return Ok(OpenHold { id, created: false });
        }
        // The hold we ran into closed (its last repository came back) or
        // was released while we waited for it: open a new one.
    }
    Err(sqlx::Error::RowNotFound)
}

/// Puts repositories (not already removed) on `hold`; returns how many
/// changed.
///
/// Rows another transaction holds are skipped rather than waited for: that
/// transaction is a reconcile of the repository, which decides (and
/// guards) its removal itself. Never waiting on a row lock here is what
/// keeps the sweep from deadlocking with reconciles of the same partition.
pub(crate) async fn attach(
    conn: &mut PgConnection,
    hold: i64,
    ids: &[RepoId],
) -> Result<u64, sqlx::Error> {
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    let locked: Vec<i64> = sqlx::query_scalar(
        "select id from repositories
         where id = any($1) and status <> 'removed' and hold_id is distinct from $2
         order by id for update skip locked",
    )
    .bind(&ids)
    .bind(hold)
    .fetch_all(&mut *conn)
    .await?;
    if locked.is_empty() {
        return Ok(0);
    }
    let done = sqlx::query("update repositories set hold_id = $1 where id = any($2)")
        .bind(hold)
        .bind(&locked)
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}

/// Takes repositories off their holds (they were seen again), then clears
/// the active holds that have no repository left, in the caller's
/// transaction. Returns the cleared holds.
///
/// Like [`attach`], skips rows a reconcile holds: that reconcile sees the
/// repository itself and takes it off its hold.
pub(crate) async fn detach(
    conn: &mut PgConnection,
    ids: &[RepoId],
) -> Result<Vec<i64>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    let held: Vec<(i64, i64)> = sqlx::query_as(
        "select id, hold_id from repositories
         where hold_id is not null and id = any($1)
         order by id for update skip locked",
    )
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?;
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let (ids, holds): (Vec<i64>, Vec<i64>) = held.into_iter().unzip();
    sqlx::query("update repositories set hold_id = null where id = any($1)")
        .bind(&ids)
        .execute(&mut *conn)
        .await?;
    clear_empty(conn, holds).await
}

/// Clears the active holds among `holds` that no repository points at.
///
/// Two transactions taking the last two repositories off one hold must not
/// each see the other's repository still on it (neither has committed), or
/// the hold stays active with none left. So each locks the hold row
/// exclusively *after* its own update and only then looks: the one that
/// waited looks with a snapshot taken after the other committed. (Each
/// statement of a read-committed transaction sees what was committed when
/// it started.) The same lock waits for an [`open`] that found the hold
/// and is still attaching repositories to it.
pub(crate) async fn clear_empty(
    conn: &mut PgConnection,
    mut holds: Vec<i64>,
) -> Result<Vec<i64>, sqlx::Error> {
    holds.sort_unstable();
    holds.dedup();
    if holds.is_empty() {
        return Ok(holds);
    }
    let active: Vec<i64> = sqlx::query_scalar(&format!(
        "select h.id from holds h where h.id = any($1) and {ACTIVE}
         order by h.id for update"
    ))
    .bind(&holds)
    .fetch_all(&mut *conn)
    .await?;
    if active.is_empty() {
        return Ok(active);
    }
    sqlx::query_scalar(&format!(
        "update holds h set cleared_at = now()
         where h.id = any($1) and {ACTIVE}
           and not exists (select 1 from repositories r where r.hold_id = h.id)
         returning h.id"
    ))
    .bind(&active)
    .fetch_all(conn)
    .await
}

crate::row! {
    struct HoldRow {
        id: i64,
        partition: Partition,
        since: DateTime<Utc>,
        reason: String,
        repos: Vec<String>,
    }
}

/// Every active hold, oldest first, with the repositories it holds.
pub async fn active_holds(pool: &PgPool) -> Result<Vec<ActiveHold>, RegistryError> {
    let rows: Vec<HoldRow> = sqlx::query_as(&format!(
        "select h.id, h.partition, h.since, h.reason,
                array(select r.owner || '/' || r.name from repositories r
                      where r.hold_id = h.id order by r.owner, r.name, r.id) as repos
         from holds h where {ACTIVE}
         order by h.id"
    ))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| ActiveHold {
            id: row.id,
            installation_id: row.partition.installation(),
            repos: row.repos,
            since: row.since,
            reason: row.reason,
        })
        .collect())
}

/// How many holds are active (the `roster_holds` gauge).
pub async fn active_hold_count(pool: &PgPool) -> Result<i64, RegistryError> {
    Ok(
        sqlx::query_scalar(&format!("select count(*) from holds h where {ACTIVE}"))
            .fetch_one(pool)
            .await?,
    )
}

/// Releases an active hold: its repositories' removals proceed at their
/// next reconcile (the caller enqueues them). `None` when no active hold
/// has that id (unknown, already released, or cleared).
pub async fn release_hold(pool: &PgPool, id: i64) -> Result<Option<Vec<RepoId>>, RegistryError> {
    let mut tx = pool.begin().await?;
    let released: Option<i64> = sqlx::query_scalar(&format!(
        "update holds h set released_at = now() where h.id = $1 and {ACTIVE} returning h.id"
    ))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    if released.is_none() {
        return Ok(None);
    }
    let repos: Vec<RepoId> =
        sqlx::query_scalar("select id from repositories where hold_id = $1 order by id")
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(Some(repos))
}
