//! Writes to the `repositories` table: what the source says about a
//! repository, and the status a reconcile leaves it in.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use sqlx::{PgConnection, PgExecutor, PgPool};

use super::clip::{clip, MAX_ERROR_BYTES, MAX_EVENT_BYTES};
use super::{events, RegistryError, Status};
use crate::source::{InstallationId, RepoId, RepoInfo};

crate::row! {
    /// The fields a reconcile decides, as locked at its start.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) struct RepoState {
        pub status: Status,
        pub error: Option<String>,
        pub synced_sha: Option<String>,
        pub attempts: i32,
        pub conflicts: Vec<String>,
        /// Git's blob id of the project file the last reconcile read.
        pub file_blob: Option<String>,
    }
}

/// Which of `ids` the registry knows, on the caller's transaction.
pub async fn known_ids(
    conn: &mut PgConnection,
    ids: &[RepoId],
) -> Result<BTreeSet<RepoId>, RegistryError> {
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    let known: Vec<RepoId> = sqlx::query_scalar("select id from repositories where id = any($1)")
        .bind(&ids)
        .fetch_all(conn)
        .await?;
    Ok(known.into_iter().collect())
}

/// How many repositories of `installation` the registry tracks: the
/// checks' budget keeps the next listing's reads for them in reserve.
pub async fn count_of_installation(
    pool: &PgPool,
    installation: InstallationId,
) -> Result<u64, RegistryError> {
    let count: i64 =
        sqlx::query_scalar("select count(*) from repositories where installation_id = $1")
            .bind(installation.0)
            .fetch_one(pool)
            .await?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// `owner/name` of a known repository; `None` when unknown.
pub async fn full_name<'e, E: PgExecutor<'e>>(
    executor: E,
    id: RepoId,
) -> Result<Option<String>, RegistryError> {
    Ok(
        sqlx::query_scalar("select owner || '/' || name from repositories where id = $1")
            .bind(id)
            .fetch_optional(executor)
            .await?,
    )
}

/// The repositories other than `except` in conflict over one of `names`:
/// they wait for a name to be released.
pub(crate) async fn waiting_for(
    pool: &PgPool,
    names: &[String],
    except: RepoId,
) -> Result<Vec<RepoId>, sqlx::Error> {
    sqlx::query_scalar(
        "select id from repositories where conflicts && $1::text[] and id <> $2 order by id",
    )
    .bind(names)
    .bind(except)
    .fetch_all(pool)
    .await
}

/// Repositories other than `except` left `invalid` because a file depends
/// on one of `names`, a project no one had then (`ROSTER_RELATIONS=require`):
/// read again once it exists. At most a thousand at a time; the listing
/// reads the others.
pub(crate) async fn waiting_for_projects(
    pool: &PgPool,
    names: &[String],
    except: RepoId,
) -> Result<Vec<RepoId>, sqlx::Error> {
    sqlx::query_scalar(
        "select r.id from repositories r
         where r.status = 'invalid' and r.id <> $2
           and exists (select 1 from unnest($1::text[]) as n(name)
                       where strpos(r.error, 'no project \"' || n.name || '\"') > 0)
         order by r.id
         limit 1000",
    )
    .bind(names)
    .bind(except)
    .fetch_all(pool)
    .await
}

crate::row! {
    /// A locked row with what a reconcile needs besides the state it decides:
    /// the names as stored, and the hold on its removal, so that writes which
    /// would change nothing can be skipped.
    #[derive(Debug)]
    pub(crate) struct Locked {
        pub state: RepoState as flatten,
        pub owner: String,
        pub name: String,
        pub installation_id: Option<InstallationId>,
        pub default_branch: String,
        pub html_url: Option<String>,
        pub hold_id: Option<i64>,
    }
}

impl Locked {
    /// Whether the stored names are those of `info`.
    pub fn names_match(&self, info: &RepoInfo) -> bool {
        self.owner == info.owner
            && self.name == info.name
            && self.installation_id == info.installation_id
            && self.default_branch == info.default_branch
            && self.html_url == info.html_url
    }
}

/// Locks the repository row for the rest of the transaction, so that one
/// repository is reconciled by one transaction at a time; `None` when unknown.
///
/// It also lets the transaction commit without waiting for the disk
/// (`synchronous_commit` off for this transaction only): should the
/// database lose the commit in a crash, it loses the queue's `done` written
/// after it too (WAL is replayed in order), so the id is reconciled again.
/// What a client was told is queued is written with a normal, waiting commit.
pub(crate) async fn lock(
    conn: &mut PgConnection,
    id: RepoId,
) -> Result<Option<Locked>, sqlx::Error> {
    sqlx::query_as(
        "select status, error, synced_sha, attempts, conflicts, file_blob,
                owner, name, installation_id, default_branch, html_url, hold_id
         from repositories
         where id = $1 and set_config('synchronous_commit', 'off', true) = 'off'
         for update",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Stores the state a reconcile decided, its error cut to
/// [`MAX_ERROR_BYTES`], and records `event` under its status
/// ([`events::record`]), in one statement. `updated_at` moves only when a
/// field changed, `last_synced_at` whenever `synced` says it was applied.
/// `fingerprint`, when given, records what decided it (kept as it was
/// otherwise). `observed_at` moves unless the observation is a listing's
/// answer (see [`Observation`]).
pub(crate) async fn write_state(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    written: Written<'_>,
) -> Result<(), sqlx::Error> {
    let Written {
        state: new,
        synced,
        fingerprint,
        observation,
        event,
    } = written;
    // The event's parts take `$1`–`$4` (events::RECORD).
    static STATEMENT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "with state as (
                 update repositories set
                     status = $2, error = $5, synced_sha = $6, attempts = $7, conflicts = $8,
                     last_synced_at = case when $9 then now() else last_synced_at end,
                     observed_at = case when $13 then now() else observed_at end,
                     updated_at = case when $10 then now() else updated_at end,
                     file_blob = $11, fingerprint = coalesce($12, fingerprint)
                 where id = $1
             ),
             {}",
            events::RECORD
        )
    });
    // Compared as stored: an error over the bound equals its stored cut.
    let new = RepoState {
        error: new
            .error
            .as_deref()
            .map(|error| clip(error, MAX_ERROR_BYTES).into_owned()),
        ..new.clone()
    };
    sqlx::query(&STATEMENT)
        .bind(id)
        .bind(new.status)
        .bind(clip(event, MAX_EVENT_BYTES).as_ref())
        .bind(events::KEPT - 1)
        .bind(&new.error)
        .bind(&new.synced_sha)
        .bind(new.attempts)
        .bind(&new.conflicts)
        .bind(synced)
        .bind(*old != new)
        .bind(&new.file_blob)
        .bind(fingerprint)
        .bind(observation == Observation::Fresh)
        .execute(conn)
        .await?;
    Ok(())
}

/// What [`write_state`] writes over a repository's old state.
pub(crate) struct Written<'a> {
    pub state: &'a RepoState,
    /// Whether the observation was applied (`last_synced_at` moves).
    pub synced: bool,
    /// What decided it, when it says (the setting's fingerprint).
    pub fingerprint: Option<&'a str>,
    pub observation: Observation,
    /// The event's message, recorded under the new status.
    pub event: &'a str,
}

/// Where an applied observation comes from, for `observed_at`: when the
/// registry last applied something newer than a listing's answer.
///
/// A listing's answer (its hint) moves nothing: the next listing's answer,
/// asked for while workers still apply this one's, is newer and must be
/// applied without another read (one trigger, one listing). Anything else
/// (a read, a push) moves it, so an answer asked for before it is not
/// applied over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// A read or a push: `observed_at` is now.
    Fresh,
    /// What a listing page read, handed over with the claim.
    Listed,
    /// Nothing was observed: a failure or a wait shown on the repository.
    /// A listing's hint read before it is still the newest answer, so its
    /// retry applies the hint without another read.
    Unobserved,
}

impl Observation {
    /// What `claim` applies: a listing's claim with its hint is the
    /// listing's answer (a stale hint is read afresh, by a read that a
    /// push's trigger, which dropped the hint, already stamped).
    pub fn of(claim: Option<&crate::controller::Claim<RepoId>>) -> Self {
        match claim {
            Some(c) if c.trigger.is_listing() && c.hint.is_some() => Self::Listed,
            _ => Self::Fresh,
        }
    }
}

/// Records a failure to observe or apply a repository: status `error`,
/// attempts + 1, entries untouched. Returns the repository's full name for
/// the logs, or `None` when it is unknown (nothing to show the error on).
pub async fn mark_error(
    pool: &PgPool,
    id: RepoId,
    message: &str,
) -> Result<Option<String>, RegistryError> {
    let mut tx = pool.begin().await?;
    let name = record_error(&mut tx, id, message).await?;
    if name.is_some() {
        tx.commit().await?;
    }
    Ok(name)
}

/// [`mark_error`] on the caller's transaction, which commits it (or not).
pub(crate) async fn record_error(
    conn: &mut PgConnection,
    id: RepoId,
    message: &str,
) -> Result<Option<String>, RegistryError> {
    let event = format!("error: {message}");
    restate(conn, id, &event, |old| {
        Some(RepoState {
            status: Status::Error,
            error: Some(message.to_string()),
            attempts: old.attempts.saturating_add(1),
            ..old.clone()
        })
    })
    .await
}

/// Records that a repository waits for a budget (GitHub's rate limit) to
/// reset: status `pending` with `message` saying until when, attempts,
/// entries and everything else as they were — nothing failed. Runs on the
/// caller's transaction, which commits it (or not). Returns the
/// repository's full name for the logs, or `None` when it is unknown.
pub(crate) async fn record_waiting(
    conn: &mut PgConnection,
    id: RepoId,
    message: &str,
) -> Result<Option<String>, RegistryError> {
    restate(conn, id, message, |old| {
        let new = RepoState {
            status: Status::Pending,
            error: Some(message.to_string()),
            ..old.clone()
        };
        (new != *old).then_some(new)
    })
    .await
}

/// Locks the repository and writes the state `change` makes of its current
/// one (none: nothing to write), with an event saying `event`. Returns the
/// repository's full name, or `None` when it is unknown.
async fn restate(
    conn: &mut PgConnection,
    id: RepoId,
    event: &str,
    change: impl FnOnce(&RepoState) -> Option<RepoState>,
) -> Result<Option<String>, RegistryError> {
    let Some(Locked {
        state: old,
        owner,
        name,
        ..
    }) = lock(conn, id).await?
    else {
        return Ok(None);
    };
    if let Some(new) = change(&old) {
        let written = Written {
            state: &new,
            synced: false,
            fingerprint: None,
            observation: Observation::Unobserved,
            event,
        };
        write_state(conn, id, &old, written).await?;
    }
    Ok(Some(format!("{owner}/{name}")))
}
