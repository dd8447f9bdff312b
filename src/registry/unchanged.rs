//! Reads that change nothing but times, and first reads of repositories
//! without a project file: most reads of an organisation are one or the
//! other (most repositories have no project file, and most files are as
//! they were), and the long way takes a transaction of a dozen statements
//! for each. Here each is one statement for a whole batch (a listing hands
//! workers a hundred repositories at a time), or for one repository read
//! alone, which writes exactly what the long way would, and nothing unless
//! every condition holds:
//! - no file again: the row `no_file` at that commit under the same
//!   settings and names, no entry, its newest event the one the long way
//!   would record again: the times move, the event is counted;
//! - no file, first sight: the row just made known (`pending`, never
//!   reconciled, no entry, no event, no hold) or not known at all: the row
//!   and its first event are written;
//! - a file again: `synced` at the same commit with the same blob, under
//!   the same settings and names, and under the name the change log last
//!   recorded (a rename learnt since is logged the long way): its entries
//!   are what that blob made them (an owner's team that changes meanwhile
//!   is followed by `owner_follow`), so only the times move and the
//!   `unchanged` event is counted, or added as `events::record` adds one.
//!
//! A claim, when there is one, is checked, not locked: locking the queue's
//! row before the repository's would take the two in the order opposite
//! to the intake's and the long way's, and could deadlock with them.
//! Unlocked, the claim may lapse between the check and the commit; what is
//! written then is still true, since the row matched the state this read
//! observed. A repository that does not qualify is left to the caller,
//! which reconciles it the long way.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use sqlx::PgPool;

use super::changes::record::logged_under_another_name;
use super::events::KEPT;
use super::free_push::blob_id;
use super::outcome::unchanged_message;
use super::repos::Observation;
use super::Status;
use crate::controller::{AppliedTogether, Claim, Failure};
use crate::db::fence::INPUT_CLAIM_IS_LIVE;
use crate::source::{FileState, Observed, RepoId, RepoInfo};

/// The batch's rows as the statements take them: one array per column.
const INPUT: &str = "
input as (
    select * from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
                         $6::bigint[], $7::text[], $8::text[], $9::bool[], $10::text[])
        as i(id, token, sha, owner, name, installation_id, default_branch, html_url, fresh, blob)
)";

/// The stored names are the observed ones.
const NAMES: &str = "r.owner = i.owner and r.name = i.name
      and r.installation_id is not distinct from i.installation_id
      and r.default_branch is not distinct from i.default_branch
      and r.html_url is not distinct from i.html_url";

/// No file again: `$11` the status, `$12` the fingerprint, `$13` the
/// event's message.
static NO_FILE_AGAIN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with {INPUT},
newest as (
    select i.id as repo_id,
           (select e.id from events e where e.repo_id = i.id order by e.id desc limit 1) as event_id
    from input i
),
{settled},
counted as (
    update events set at = now(), count = count + 1
    where id in (select n.event_id from newest n join settled s on s.id = n.repo_id)
)
select id from settled",
        settled = settled(
            "r.synced_sha is not distinct from i.sha and r.file_blob is null
      and not exists (select 1 from entries where repo_id = i.id)
      and exists (select 1 from events e join newest n on e.id = n.event_id
                  where n.repo_id = i.id and e.kind = $11 and e.message = $13)"
        ),
    )
});

/// No file, first sight, with the same parameters as [`NO_FILE_AGAIN`].
static NO_FILE_FIRST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with {INPUT},
written as (
    insert into repositories as r
        (id, owner, name, installation_id, default_branch, html_url,
         status, synced_sha, fingerprint, last_synced_at, observed_at)
    select i.id, i.owner, i.name, i.installation_id, i.default_branch, i.html_url,
           $11, i.sha, $12, now(), case when i.fresh then now() end
    from input i
    where set_config('synchronous_commit', 'off', true) = 'off'
      and (i.token is null or {live})
      and not exists (select 1 from entries where repo_id = i.id)
      and not exists (select 1 from events where repo_id = i.id)
    order by i.id
    on conflict (id) do update set
        owner = excluded.owner, name = excluded.name,
        installation_id = excluded.installation_id,
        default_branch = excluded.default_branch, html_url = excluded.html_url,
        status = excluded.status, synced_sha = excluded.synced_sha,
        fingerprint = excluded.fingerprint, last_synced_at = now(),
        observed_at = coalesce(excluded.observed_at, r.observed_at),
        updated_at = now()
    where r.status = 'pending' and r.error is null and r.attempts = 0
      and cardinality(r.conflicts) = 0 and r.synced_sha is null
      and r.file_blob is null and r.hold_id is null
    returning r.id
),
added as (
    insert into events (repo_id, kind, message) select id, $11, $13 from written
)
select id from written",
        live = INPUT_CLAIM_IS_LIVE,
    )
});

/// A file again: `$11` the status, `$12` the fingerprint, `$13` each
/// row's event message, `$14` how many older events a new one keeps.
static FILE_AGAIN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with {INPUT},
messages as (
    select * from unnest($1::bigint[], $13::text[]) as m(id, message)
),
newest as (
    select i.id as repo_id, e.id as event_id, e.kind = $11 and e.message = m.message as same
    from input i
    join messages m on m.id = i.id
    left join lateral (select id, kind, message from events
                       where repo_id = i.id order by id desc limit 1) e on true
),
{settled},
counted as (
    update events set at = now(), count = count + 1
    where id in (select n.event_id from newest n join settled s on s.id = n.repo_id
                 where n.same)
),
added as (
    insert into events (repo_id, kind, message)
    select s.id, $11, m.message
    from settled s join newest n on n.repo_id = s.id join messages m on m.id = s.id
    where n.same is not true
),
trimmed as (
    delete from events d
    using settled s join newest n on n.repo_id = s.id
    where d.repo_id = s.id and n.same is not true
      and d.id <= (select e.id from events e where e.repo_id = s.id
                   order by e.id desc offset $14 limit 1)
)
select id from settled",
        settled = settled(&format!(
            "r.synced_sha = i.sha and r.file_blob = i.blob and not {}",
            logged_under_another_name("i.id", "i.owner || '/' || i.name")
        )),
    )
});

/// The part both "again" statements share: the rows of the input whose
/// repository is exactly as its read says (status `$11` at rest, the
/// fingerprint `$12`, the names, no hold, the claim live) and, in
/// `conditions`, as the case needs; only their times move.
fn settled(conditions: &str) -> String {
    format!(
        "settled as (
    update repositories r
    set observed_at = case when i.fresh then now() else r.observed_at end, last_synced_at = now()
    from input i
    where r.id = i.id
      and set_config('synchronous_commit', 'off', true) = 'off'
      and (i.token is null or {INPUT_CLAIM_IS_LIVE})
      and r.status = $11 and r.error is null and r.attempts = 0 and cardinality(r.conflicts) = 0
      and r.hold_id is null and r.fingerprint is not distinct from $12
      and {NAMES}
      and {conditions}
    returning r.id
)"
    )
}

/// One row of a batch statement's input.
struct Row<'a> {
    id: RepoId,
    /// The claim's token, when the write must wait for a live claim.
    token: Option<&'a str>,
    /// Whether `observed_at` moves ([`Observation::Fresh`]).
    fresh: bool,
    repo: &'a RepoInfo,
    sha: Option<&'a str>,
    blob: Option<String>,
}

impl<'a> Row<'a> {
    /// The row of `observed` when one of these statements may apply it:
    /// no file, or (with `files`) a file.
    fn of(
        id: RepoId,
        claim: Option<&'a Claim<RepoId>>,
        observed: &'a Observed,
        files: bool,
    ) -> Option<(Self, bool)> {
        let Observed::Present { repo, file } = observed else {
            return None;
        };
        let (sha, blob) = match file {
            FileState::Absent { sha } => (sha.as_deref(), None),
            FileState::Found { sha, bytes } if files => (Some(sha.as_str()), Some(blob_id(bytes))),
            _ => return None,
        };
        let found = blob.is_some();
        let row = Self {
            id,
            token: claim.map(|c| c.token.as_str()),
            fresh: Observation::of(claim) == Observation::Fresh,
            repo,
            sha,
            blob,
        };
        Some((row, found))
    }
}

/// The batch's input as arrays, in id order (the order writers lock rows
/// in).
fn arrays(rows: &mut [Row<'_>]) -> sqlx::postgres::PgArguments {
    rows.sort_by_key(|r| r.id);
    let mut args = sqlx::postgres::PgArguments::default();
    add(&mut args, rows.iter().map(|r| r.id.0).collect::<Vec<i64>>());
    add(
        &mut args,
        rows.iter().map(|r| r.token).collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter().map(|r| r.sha).collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.owner.as_str())
            .collect::<Vec<&str>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.name.as_str())
            .collect::<Vec<&str>>(),
    );
    let installations: Vec<Option<i64>> = rows
        .iter()
        .map(|r| r.repo.installation_id.map(|i| i.0))
        .collect();
    add(&mut args, installations);
    let branches: Vec<&str> = rows
        .iter()
        .map(|r| r.repo.default_branch.as_str())
        .collect();
    add(&mut args, branches);
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.html_url.as_deref())
            .collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter().map(|r| r.fresh).collect::<Vec<bool>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.blob.as_deref())
            .collect::<Vec<Option<&str>>>(),
    );
    args
}

/// What the statements record besides each row: the settings' fingerprint,
/// the message of a reconcile finding no file, and whether files may be
/// settled (no `require` setting: a file's validity then changes only with
/// its blob).
#[derive(Clone, Copy)]
pub(super) struct Recorded<'a> {
    pub fingerprint: &'a str,
    pub no_file: &'a str,
    pub files: bool,
}

/// Applies together what of a batch qualifies (see the module): for each
/// claim, its outcome when it was applied here. A statement that fails
/// leaves its rows to the caller, and says why in the log.
pub(super) async fn apply(
    pool: &PgPool,
    claims: &[Claim<RepoId>],
    states: &[Result<Observed, Failure>],
    recorded: Recorded<'_>,
) -> Vec<Option<AppliedTogether>> {
    let mut outcomes = vec![None; claims.len()];
    let rows = claims.iter().zip(states).filter_map(|(claim, state)| {
        let observed = state.as_ref().ok()?;
        Row::of(claim.key, Some(claim), observed, recorded.files)
    });
    let applied: HashMap<RepoId, &'static str> = match write(pool, rows, recorded).await {
        Ok(applied) => applied.into_iter().collect(),
        Err(error) => {
            tracing::info!(%error, rows = claims.len(), "a batch's reads could not be applied together; applying them one by one");
            return outcomes;
        }
    };
    for ((slot, claim), state) in outcomes.iter_mut().zip(claims).zip(states) {
        if let Some(outcome) = applied.get(&claim.key) {
            let name = match state {
                Ok(Observed::Present { repo, .. }) => Some(repo.full_name()),
                _ => None,
            };
            *slot = Some(AppliedTogether { outcome, name });
        }
    }
    outcomes
}

/// [`apply`] for one repository read outside a batch; `None` when it must
/// be reconciled the long way.
pub(super) async fn apply_one(
    pool: &PgPool,
    id: RepoId,
    claim: Option<&Claim<RepoId>>,
    observed: &Observed,
    recorded: Recorded<'_>,
) -> Result<Option<&'static str>, sqlx::Error> {
    let row = Row::of(id, claim, observed, recorded.files);
    let applied = write(pool, row.into_iter(), recorded).await?;
    Ok(applied.first().map(|(_, outcome)| *outcome))
}

/// The statements on `rows`: no file again, then no file at first sight
/// for what is left, then files again.
async fn write<'a>(
    pool: &PgPool,
    rows: impl Iterator<Item = (Row<'a>, bool)>,
    recorded: Recorded<'_>,
) -> Result<Vec<(RepoId, &'static str)>, sqlx::Error> {
    let (found, mut absent): (Vec<_>, Vec<_>) = rows.partition(|(_, found)| *found);
    let mut found: Vec<Row<'a>> = found.into_iter().map(|(row, _)| row).collect();
    let mut absent: Vec<Row<'a>> = absent.drain(..).map(|(row, _)| row).collect();
    let mut applied = Vec::new();
    if !absent.is_empty() {
        let status = Status::NoFile.as_str();
        let shared = |args: &mut sqlx::postgres::PgArguments| {
            add(args, status);
            add(args, recorded.fingerprint);
            add(args, recorded.no_file);
        };
        let again = run(pool, &NO_FILE_AGAIN, &mut absent, shared).await?;
        absent.retain(|r| !again.contains(&r.id));
        applied.extend(again.into_iter().map(|id| (id, status)));
        if !absent.is_empty() {
            let first = run(pool, &NO_FILE_FIRST, &mut absent, shared).await?;
            applied.extend(first.into_iter().map(|id| (id, status)));
        }
    }
    if !found.is_empty() {
        let status = Status::Synced.as_str();
        // In the input's order (by id), as `run` sorts it.
        found.sort_by_key(|r| r.id);
        let messages: Vec<String> = found
            .iter()
            .map(|r| unchanged_message(r.sha.unwrap_or_default()))
            .collect();
        let settled = run(pool, &FILE_AGAIN, &mut found, |args| {
            add(args, status);
            add(args, recorded.fingerprint);
            add(args, &messages);
            add(args, KEPT - 1);
        })
        .await?;
        applied.extend(settled.into_iter().map(|id| (id, status)));
    }
    Ok(applied)
}

fn add<'q, T>(args: &mut sqlx::postgres::PgArguments, value: T)
where
    T: sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + 'q,
{
    use sqlx::Arguments;
    // Encoding plain values and arrays of them cannot fail; were it to,
    // the statement fails, and its rows are reconciled the long way.
    let _ = args.add(value);
}

/// Runs `sql` on `rows` with the parameters `more` adds after the input's;
/// the ids it applied.
async fn run(
    pool: &PgPool,
    sql: &str,
    rows: &mut [Row<'_>],
    more: impl FnOnce(&mut sqlx::postgres::PgArguments),
) -> Result<HashSet<RepoId>, sqlx::Error> {
    let mut args = arrays(rows);
    more(&mut args);
    let ids = sqlx::query_scalar_with::<_, i64, _>(sql, args)
        .fetch_all(pool)
        .await?;
    Ok(ids.into_iter().map(RepoId).collect())
}

#[cfg(test)]
mod tests;
