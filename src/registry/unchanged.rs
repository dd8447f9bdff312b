//! A read that finds what the registry already says: a repository recorded
//! `no_file` at a commit, read again at that same commit with no project
//! file, under the same settings. Most repositories of an organisation have
//! no project file, and every listing and every push that must be read
//! reads them again, so this is the commonest reconcile there is; written
//! the long way it takes a transaction of a dozen statements to change
//! nothing but two times and an event's count. Here it is one statement,
//! which writes exactly what that transaction would (`observed_at`, unless
//! it applies a listing's answer, and `last_synced_at` now, the newest event counted once more) and nothing at
//! all unless every condition holds; the caller then reconciles the long
//! way, which decides whatever this one does not.

use std::sync::LazyLock;

use sqlx::PgPool;

use super::changes::record::logged_under_another_name;
use super::clip::{clip, MAX_EVENT_BYTES};
use super::events::KEPT;
use super::free_push::blob_id;
use super::outcome::unchanged_message;
use super::repos::Observation;
use super::Status;
use crate::controller::Claim;
use crate::db::fence::CLAIM_IS_LIVE;
use crate::source::{FileState, Observed, RepoId};

/// One statement, all or nothing: the repository row is updated only when
/// its state is exactly the `no_file` state the reconcile would write, its
/// names are the observed ones, it owns no entry, its newest event is the
/// one the reconcile would record again, and (with a claim) the claim is
/// live; the event is counted only when the row was updated.
///
/// The claim's queue row is checked, not locked: locking it before the
/// repository row would take the two in the order opposite to the intake's
/// and the long way's, and could deadlock with them. Unlocked, the claim
/// may lapse between the check and the commit; what is written then is
/// still true, since the row matched the state this read observed, field
/// for field, and only its times and the event's count move.
static SETTLE: LazyLock<String> = LazyLock::new(|| {
    "
with newest as (
    select id from events where repo_id = $1 order by id desc limit 1
),
settled as (
    update repositories
    set observed_at = case when $12 then now() else observed_at end, last_synced_at = now()
    where id = $1
      and set_config('synchronous_commit', 'off', true) = 'off'
      and ($2::text is null or {claim_is_live})
      and status = $3 and error is null and attempts = 0 and cardinality(conflicts) = 0
      and synced_sha is not distinct from $4
      and file_blob is null and hold_id is null
      and fingerprint is not distinct from $5
      and owner = $6 and name = $7
      and installation_id is not distinct from $8
      and default_branch is not distinct from $9
      and html_url is not distinct from $10
      and not exists (select 1 from entries where repo_id = $1)
      and exists (select 1 from events e join newest using (id)
                  where e.kind = $3 and e.message = $11)
    returning id
),
counted as (
    update events set at = now(), count = count + 1
    where id = (select id from newest) and exists (select 1 from settled)
    returning id
)
select count(*) from settled"
        .replace("{claim_is_live}", CLAIM_IS_LIVE)
});

/// Settles `observed` in one statement when it changes nothing but the
/// times (see the module); `false` when it may change more, or the claim
/// is no longer live, and the caller must reconcile the long way.
/// `fingerprint` and `message` are what the long way would record.
pub(super) async fn settle(
    pool: &PgPool,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
    message: &str,
) -> Result<bool, sqlx::Error> {
    let Observed::Present {
        repo,
        file: FileState::Absent { sha },
    } = observed
    else {
        return Ok(false);
    };
    let message = clip(message, MAX_EVENT_BYTES);
    let settled: i64 = sqlx::query_scalar(SETTLE.as_str())
        .bind(id)
        .bind(claim.map(|c| c.token.as_str()))
        .bind(Status::NoFile.as_str())
        .bind(sha.as_deref())
        .bind(fingerprint)
        .bind(&repo.owner)
        .bind(&repo.name)
        .bind(repo.installation_id.map(|i| i.0))
        .bind(&repo.default_branch)
        .bind(repo.html_url.as_deref())
        .bind(message.as_ref())
        .bind(Observation::of(claim) == Observation::Fresh)
        .fetch_one(pool)
        .await?;
    Ok(settled > 0)
}

/// [`SETTLE`] for a project file found again as it was applied: the
/// repository `synced` at the same commit with the same blob, under the
/// same settings, names and claim, under the name the change log last
/// recorded (a rename learnt since is logged the long way). Its entries
/// are what that blob made them (an owner's team that changes meanwhile
/// is followed by `owner_follow`), so the long way would write only the times and its
/// event, `synced <sha>: unchanged`: counted when it is the newest,
/// otherwise added, keeping the newest [`KEPT`](super::events::KEPT), as
/// `events::record` does.
static SETTLE_FILE: LazyLock<String> = LazyLock::new(|| {
    "
with newest as (
    select id, kind = $3 and message = $11 as same
    from events where repo_id = $1 order by id desc limit 1
),
settled as (
    update repositories
    set observed_at = case when $12 then now() else observed_at end, last_synced_at = now()
    where id = $1
      and set_config('synchronous_commit', 'off', true) = 'off'
      and ($2::text is null or {claim_is_live})
      and status = $3 and error is null and attempts = 0 and cardinality(conflicts) = 0
      and synced_sha = $4 and file_blob = $13 and hold_id is null
      and fingerprint is not distinct from $5
      and owner = $6 and name = $7
      and installation_id is not distinct from $8
      and default_branch is not distinct from $9
      and html_url is not distinct from $10
      and not {renamed}
    returning id
),
counted as (
    update events set at = now(), count = count + 1
    where id = (select id from newest where same) and exists (select 1 from settled)
    returning id
),
added as (
    insert into events (repo_id, kind, message)
    select $1, $3, $11
    where exists (select 1 from settled) and not exists (select 1 from newest where same)
),
trimmed as (
    delete from events
    where repo_id = $1
      and exists (select 1 from settled) and not exists (select 1 from newest where same)
      and id <= (select id from events where repo_id = $1 order by id desc offset $14 limit 1)
)
select count(*) from settled"
        .replace("{claim_is_live}", CLAIM_IS_LIVE)
        .replace(
            "{renamed}",
            &logged_under_another_name("$1", "$6 || '/' || $7"),
        )
});

/// Settles a project file found again as it was applied, in one statement
/// (see [`SETTLE_FILE`]); `false` when anything else may change, and the
/// caller must reconcile the long way. Only for settings under which a
/// file's validity cannot change without its blob changing (no
/// `require`): the caller says so. `fingerprint` and `message` are what
/// the long way would record.
pub(super) async fn settle_file(
    pool: &PgPool,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
) -> Result<bool, sqlx::Error> {
    let Observed::Present {
        repo,
        file: FileState::Found { sha, bytes },
    } = observed
    else {
        return Ok(false);
    };
    let message = unchanged_message(sha);
    let settled: i64 = sqlx::query_scalar(SETTLE_FILE.as_str())
        .bind(id)
        .bind(claim.map(|c| c.token.as_str()))
        .bind(Status::Synced.as_str())
        .bind(sha)
        .bind(fingerprint)
        .bind(&repo.owner)
        .bind(&repo.name)
        .bind(repo.installation_id.map(|i| i.0))
        .bind(&repo.default_branch)
        .bind(repo.html_url.as_deref())
        .bind(message.as_str())
        .bind(Observation::of(claim) == Observation::Fresh)
        .bind(blob_id(bytes))
        .bind(KEPT - 1)
        .fetch_one(pool)
        .await?;
    Ok(settled > 0)
}

#[cfg(test)]
mod tests;
