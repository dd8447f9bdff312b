//! The three statements of [`super`], one per case it writes, over the
//! batch's rows given as one array per column.

use std::sync::LazyLock;

use crate::db::fence::INPUT_CLAIM_IS_LIVE;
use crate::registry::changes::record::logged_under_another_name;

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
pub(super) static NO_FILE_AGAIN: LazyLock<String> = LazyLock::new(|| {
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
pub(super) static NO_FILE_FIRST: LazyLock<String> = LazyLock::new(|| {
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
pub(super) static FILE_AGAIN: LazyLock<String> = LazyLock::new(|| {
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
