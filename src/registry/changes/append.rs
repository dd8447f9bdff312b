//! The end of a reconcile's transaction: its changes take their `seq`s
//! from the head and are appended to the log, the claim checked in the
//! same statement, then the commit.

use std::sync::LazyLock;

use serde_json::Value;
use sqlx::{PgConnection, Postgres, Transaction};

use super::record::Pending;
use super::wake::CHANNEL;
use super::ChangeKind;
use crate::controller::Claim;
use crate::db::fence::{claim_locked, ClaimFence};
use crate::source::RepoId;

/// The bytes a change takes as stored (also in migration 0017): its JSON
/// and its text, and a little for the rest of the row. The size bound of
/// the log (`ROSTER_HISTORY_MAX_BYTES`) adds these up.
const STORED_BYTES: &str = "64 + octet_length(c.name) + octet_length(c.repo) \
     + octet_length(c.cause) + coalesce(octet_length(c.sha), 0) \
     + coalesce(octet_length(c.before::text), 0) + coalesce(octet_length(c.after::text), 0) \
     + coalesce(octet_length(array_to_string(c.dependents, ',')) + cardinality(c.dependents) * 3, 0)";

/// The append: `$1` how many, `$2`–`$11` the changes' columns, `$12` and
/// `$13` the claim's repository and token (both null: no claim to
/// check). It returns whether the claim is live and the last `seq`
/// written; when the claim is not, it takes no number and writes nothing.
static APPEND: LazyLock<String> = LazyLock::new(|| {
    format!(
        "with fence as ({fence}),
         held as (select $13::text is null or exists (select 1 from fence) as held),
         head as (update change_head set seq = seq + $1
                  where (select held from held) returning seq),
         written as (
             insert into changes (seq, kind, name, repo, repo_id, sha, cause, before, after,
                                  dependents, dependents_total, bytes, shown_bytes)
             select head.seq - $1 + c.ord, c.kind, c.name, c.repo, c.repo_id, c.sha, c.cause,
                    c.before, c.after, c.dependents, c.dependents_total, size.bytes,
                    size.bytes + case when c.kind = 'changed'
                                      then octet_length(c.after::text) else 0 end
             from head,
                  unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[],
                         $7::text[], $8::jsonb[], $9::jsonb[], $10::jsonb[], $11::int[])
                  with ordinality as j(kind, name, repo, repo_id, sha, cause, before, after,
                                       names, dependents_total, ord)
                  cross join lateral (
                      select j.*, case when j.names is null then null else array(
                          select jsonb_array_elements_text(j.names)) end as dependents) c
                  cross join lateral (select {STORED_BYTES} as bytes) size
             returning seq),
         last as (select max(seq) as seq from written)
         select held.held, last.seq
         from held, last
              left join lateral (select pg_notify('{CHANNEL}', last.seq::text)
                                 where last.seq is not null) n on true",
        fence = claim_locked("$12", "$13"),
    )
});

/// `before` as stored: whole for a removal, only the moved fields for a
/// change (the feed puts the rest back from `after`).
fn stored_before(change: &Pending) -> Option<Value> {
    match (change.kind, &change.before, &change.after) {
        (ChangeKind::Changed, Some(before), Some(after)) => {
            Some(super::patch::moved_fields(before, after))
        }
        _ => change.before.clone(),
    }
}

/// Takes `changes.len()` numbers from the head and appends the changes, in
/// one statement, and announces them on [`CHANNEL`] (delivered at commit).
///
/// Must be the last statement before the commit: the head's row lock it
/// takes is held until then, so no other transaction takes numbers in
/// between, and transactions become visible in the order of their numbers.
/// Returns the last `seq` written (`None` when there was nothing to write).
pub(crate) async fn append(
    conn: &mut PgConnection,
    changes: &[Pending],
) -> Result<Option<i64>, sqlx::Error> {
    Ok(fenced_append(conn, changes, None).await?.1)
}

/// [`append`] that first checks and locks `claim`, as
/// [`ClaimFence::holds`] does, in the same statement: whether it holds,
/// and the last `seq` written when it did.
async fn fenced_append(
    conn: &mut PgConnection,
    changes: &[Pending],
    claim: Option<&Claim<RepoId>>,
) -> Result<(bool, Option<i64>), sqlx::Error> {
    if changes.is_empty() {
        return Ok((true, None));
    }
    let n = i64::try_from(changes.len()).unwrap_or(i64::MAX);
    let column = |f: fn(&Pending) -> String| changes.iter().map(f).collect::<Vec<_>>();
    let kinds = column(|c| c.kind.as_str().to_owned());
    let names = column(|c| c.name.clone());
    let repos = column(|c| c.repo.clone());
    let causes = column(|c| c.cause.as_str().to_owned());
    let ids: Vec<i64> = changes.iter().map(|c| c.repo_id.0).collect();
    let shas: Vec<Option<String>> = changes.iter().map(|c| c.sha.clone()).collect();
    let befores: Vec<Option<Value>> = changes.iter().map(stored_before).collect();
    let afters: Vec<Option<Value>> = changes.iter().map(|c| c.after.clone()).collect();
    // Arrays of arrays must be rectangular: each removal's names go as one
    // JSON list, read back as text[].
    let dependents: Vec<Option<Value>> = changes
        .iter()
        .map(|c| c.dependents.as_ref().map(|d| Value::from(d.names.clone())))
        .collect();
    let totals: Vec<Option<i32>> = changes
        .iter()
        .map(|c| {
            c.dependents
                .as_ref()
                .map(|d| i32::try_from(d.total).unwrap_or(i32::MAX))
        })
        .collect();
    sqlx::query_as(&APPEND)
        .bind(n)
        .bind(&kinds)
        .bind(&names)
        .bind(&repos)
        .bind(&ids)
        .bind(&shas)
        .bind(&causes)
        .bind(&befores)
        .bind(&afters)
        .bind(&dependents)
        .bind(&totals)
        .bind(claim.map(|c| c.key.0))
        .bind(claim.map(|c| c.token.as_str()))
        .fetch_one(conn)
        .await
}

/// Commits a reconcile's transaction with its changes when `claim` (if
/// any) is still live, else rolls it back; returns whether it committed.
/// The claim is checked and locked in the append's own statement (the
/// registry and the queue share one database; `queue` checks it when there
/// is nothing to append).
///
/// The order keeps the head's lock as short as it can be: the append and
/// the commit, nothing else.
pub(crate) async fn commit_with_changes<Q: ClaimFence>(
    queue: &Q,
    mut tx: Transaction<'_, Postgres>,
    claim: Option<&Claim<RepoId>>,
    changes: &[Pending],
) -> Result<bool, sqlx::Error> {
    let held = match (claim, changes.is_empty()) {
        (Some(claim), true) => queue.holds(&mut tx, claim).await?,
        (claim, _) => fenced_append(&mut tx, changes, claim).await?.0,
    };
    if !held {
        tx.rollback().await?;
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}
