//! A batch's reads that change nothing but times, and its first reads of
//! repositories without a project file, applied in one statement each for
//! the whole batch: what `unchanged` and `first_sight` write for one
//! repository, written for every repository of the batch that qualifies
//! under the same conditions. A listing hands workers a hundred
//! repositories at a time, most of them in one of these cases, so a whole
//! installation listed costs a few statements a batch instead of one or
//! more each. A repository that does not qualify is left to the caller,
//! which reconciles it alone.

use std::collections::HashSet;
use std::sync::LazyLock;

use sqlx::PgPool;

use super::changes::record::logged_under_another_name;
use super::events::KEPT;
use super::free_push::blob_id;
use super::outcome::unchanged_message;
use super::repos::Observation;
use super::Status;
use crate::controller::Claim;
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

/// `unchanged::SETTLE` for a batch: `$11` the status, `$12` the
/// fingerprint, `$13` the event's message.
static NO_FILE_AGAIN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with {INPUT},
newest as (
    select i.id as repo_id,
           (select e.id from events e where e.repo_id = i.id order by e.id desc limit 1) as event_id
    from input i
),
settled as (
    update repositories r
    set observed_at = case when i.fresh then now() else r.observed_at end, last_synced_at = now()
    from input i
    where r.id = i.id
      and set_config('synchronous_commit', 'off', true) = 'off'
      and (i.token is null or {live})
      and r.status = $11 and r.error is null and r.attempts = 0 and cardinality(r.conflicts) = 0
      and r.synced_sha is not distinct from i.sha
      and r.file_blob is null and r.hold_id is null
      and r.fingerprint is not distinct from $12
      and {NAMES}
      and not exists (select 1 from entries where repo_id = i.id)
      and exists (select 1 from events e join newest n on e.id = n.event_id
                  where n.repo_id = i.id and e.kind = $11 and e.message = $13)
    returning r.id
),
counted as (
    update events set at = now(), count = count + 1
    where id in (select n.event_id from newest n join settled s on s.id = n.repo_id)
)
select id from settled",
        live = INPUT_CLAIM_IS_LIVE,
    )
});

/// `first_sight::FIRST_SIGHT` for a batch, with the same parameters as
/// [`NO_FILE_AGAIN`].
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

/// `unchanged::SETTLE_FILE` for a batch: `$11` the status, `$12` the
/// fingerprint, `$13` each row's event message, `$14` how many older
/// events a new one keeps.
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
settled as (
    update repositories r
    set observed_at = case when i.fresh then now() else r.observed_at end, last_synced_at = now()
    from input i
    where r.id = i.id
      and set_config('synchronous_commit', 'off', true) = 'off'
      and (i.token is null or {live})
      and r.status = $11 and r.error is null and r.attempts = 0 and cardinality(r.conflicts) = 0
      and r.synced_sha = i.sha and r.file_blob = i.blob and r.hold_id is null
      and r.fingerprint is not distinct from $12
      and {NAMES}
      and not {renamed}
    returning r.id
),
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
        renamed = logged_under_another_name("i.id", "i.owner || '/' || i.name"),
        live = INPUT_CLAIM_IS_LIVE,
    )
});

/// One row of a batch statement's input.
struct Row<'a> {
    id: RepoId,
    claim: &'a Claim<RepoId>,
    repo: &'a RepoInfo,
    sha: Option<&'a str>,
    blob: Option<String>,
}

/// The batch's input as arrays, in id order (the order writers lock rows
/// in).
fn arrays(rows: &mut [Row<'_>]) -> sqlx::postgres::PgArguments {
    use sqlx::Arguments;
    rows.sort_by_key(|r| r.id);
    let mut args = sqlx::postgres::PgArguments::default();
    let ids: Vec<i64> = rows.iter().map(|r| r.id.0).collect();
    let tokens: Vec<&str> = rows.iter().map(|r| r.claim.token.as_str()).collect();
    let shas: Vec<Option<&str>> = rows.iter().map(|r| r.sha).collect();
    let owners: Vec<&str> = rows.iter().map(|r| r.repo.owner.as_str()).collect();
    let names: Vec<&str> = rows.iter().map(|r| r.repo.name.as_str()).collect();
    let installations: Vec<Option<i64>> = rows
        .iter()
        .map(|r| r.repo.installation_id.map(|i| i.0))
        .collect();
    let branches: Vec<&str> = rows
        .iter()
        .map(|r| r.repo.default_branch.as_str())
        .collect();
    let urls: Vec<Option<&str>> = rows.iter().map(|r| r.repo.html_url.as_deref()).collect();
    let fresh: Vec<bool> = rows
        .iter()
        .map(|r| Observation::of(Some(r.claim)) == Observation::Fresh)
        .collect();
    let blobs: Vec<Option<&str>> = rows.iter().map(|r| r.blob.as_deref()).collect();
    // Adding an array of plain values cannot fail; were it to, the
    // statement fails and every row is left to the caller.
    let _ = args.add(ids);
    let _ = args.add(tokens);
    let _ = args.add(shas);
    let _ = args.add(owners);
    let _ = args.add(names);
    let _ = args.add(installations);
    let _ = args.add(branches);
    let _ = args.add(urls);
    let _ = args.add(fresh);
    let _ = args.add(blobs);
    args
}

/// What a batch applied together, by repository id, with its outcome.
pub(super) struct Applied(pub Vec<(RepoId, &'static str)>);

/// Applies together what of `items` qualifies (see the module): rows
/// without a file settled or seen for the first time, unchanged files
/// settled when `files` (no `require` setting). `fingerprint` and
/// `no_file` are what the long way records. A statement that fails leaves
/// its rows to the caller, and says why in the log.
pub(super) async fn apply(
    pool: &PgPool,
    items: &[(&Claim<RepoId>, &Observed)],
    fingerprint: &str,
    no_file: &str,
    files: bool,
) -> Applied {
    let mut absent = Vec::new();
    let mut found = Vec::new();
    for (claim, observed) in items {
        let Observed::Present { repo, file } = observed else {
            continue;
        };
        match file {
            FileState::Absent { sha } => absent.push(Row {
                id: claim.key,
                claim,
                repo,
                sha: sha.as_deref(),
                blob: None,
            }),
            FileState::Found { sha, bytes } if files => found.push(Row {
                id: claim.key,
                claim,
                repo,
                sha: Some(sha.as_str()),
                blob: Some(blob_id(bytes)),
            }),
            _ => {}
        }
    }
    let mut applied = Vec::new();
    if !absent.is_empty() {
        let status = Status::NoFile.as_str();
        let again = run(pool, &NO_FILE_AGAIN, &mut absent, |args| {
            add(args, status);
            add(args, fingerprint);
            add(args, no_file);
        })
        .await;
        absent.retain(|r| !again.contains(&r.id));
        let first = match absent.is_empty() {
            true => HashSet::new(),
            false => {
                run(pool, &NO_FILE_FIRST, &mut absent, |args| {
                    add(args, status);
                    add(args, fingerprint);
                    add(args, no_file);
                })
                .await
            }
        };
        applied.extend(again.union(&first).map(|id| (*id, status)));
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
            add(args, fingerprint);
            add(args, &messages);
            add(args, KEPT - 1);
        })
        .await;
        applied.extend(settled.into_iter().map(|id| (id, status)));
    }
    Applied(applied)
}

fn add<'q, T>(args: &mut sqlx::postgres::PgArguments, value: T)
where
    T: sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + 'q,
{
    use sqlx::Arguments;
    // As in `arrays`: a failure here fails the statement, never a row.
    let _ = args.add(value);
}

/// Runs `sql` on `rows` with the parameters `more` adds after the input's;
/// the ids it applied (none when it failed).
async fn run(
    pool: &PgPool,
    sql: &str,
    rows: &mut [Row<'_>],
    more: impl FnOnce(&mut sqlx::postgres::PgArguments),
) -> HashSet<RepoId> {
    let mut args = arrays(rows);
    more(&mut args);
    match sqlx::query_scalar_with::<_, i64, _>(sql, args)
        .fetch_all(pool)
        .await
    {
        Ok(ids) => ids.into_iter().map(RepoId).collect(),
        Err(error) => {
            tracing::info!(%error, rows = rows.len(), "a batch's reads could not be applied together; applying them one by one");
            HashSet::new()
        }
    }
}

#[cfg(test)]
mod tests;
