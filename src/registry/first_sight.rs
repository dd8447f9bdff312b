//! A repository seen for the first time with no project file: just made
//! known (`pending`, as an `installation` webhook or a listing leaves it)
//! or not known at all. Most repositories of an organisation have no
//! project file, so this is what an installation is made of; the long way
//! takes a transaction of a dozen statements to write a row and one event.
//! Here it is one statement, which writes exactly that row and that event
//! and nothing at all unless every condition holds; the caller then
//! reconciles the long way.

use std::sync::LazyLock;

use sqlx::PgPool;

use super::clip::{clip, MAX_EVENT_BYTES};
use super::repos::Observation;
use super::Status;
use crate::controller::Claim;
use crate::db::fence::CLAIM_IS_LIVE;
use crate::source::{FileState, Observed, RepoId};

/// One statement, all or nothing: the row is inserted as the long way
/// leaves it, or, when it exists, updated only while it is exactly as a
/// webhook or a listing made it known (`pending`, never reconciled, no
/// entry, no event, no hold); its first event goes with it. With a claim,
/// only while the claim is live (checked, not locked, as in
/// `unchanged::settle`, for the same reason).
static FIRST_SIGHT: LazyLock<String> = LazyLock::new(|| {
    "
with written as (
    insert into repositories as r
        (id, owner, name, installation_id, default_branch, html_url,
         status, synced_sha, fingerprint, last_synced_at, observed_at)
    select $1, $6, $7, $8, $9, $10, $3, $4, $5, now(), case when $12 then now() end
    where set_config('synchronous_commit', 'off', true) = 'off'
      and ($2::text is null or {claim_is_live})
      and not exists (select 1 from entries where repo_id = $1)
      and not exists (select 1 from events where repo_id = $1)
    on conflict (id) do update set
        owner = excluded.owner, name = excluded.name,
        installation_id = excluded.installation_id,
        default_branch = excluded.default_branch, html_url = excluded.html_url,
        status = excluded.status, synced_sha = excluded.synced_sha,
        fingerprint = excluded.fingerprint, last_synced_at = now(),
        observed_at = case when $12 then now() else r.observed_at end,
        updated_at = now()
    where r.status = 'pending' and r.error is null and r.attempts = 0
      and cardinality(r.conflicts) = 0 and r.synced_sha is null
      and r.file_blob is null and r.hold_id is null
    returning r.id
),
added as (
    insert into events (repo_id, kind, message) select id, $3, $11 from written
)
select count(*) from written"
        .replace("{claim_is_live}", CLAIM_IS_LIVE)
});

/// Writes `observed`, a repository with no project file, in one statement
/// when the repository was never reconciled (see the module); `false` when
/// it was, or the claim is no longer live, and the caller must reconcile
/// the long way. `fingerprint` and `message` are what the long way would
/// record.
pub(super) async fn settle_first(
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
    let written: i64 = sqlx::query_scalar(FIRST_SIGHT.as_str())
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
    Ok(written > 0)
}

#[cfg(test)]
mod tests;
