//! Owners followed by id: when an account's directory changes (a team
//! renamed or deleted, a member gone, its first read), each entry of the
//! account's repositories gets its owner resolved again, under the
//! repository's lock like a reconcile. The file's text (`owner`) never
//! changes, nothing is removed; what moved goes into the change log, with
//! cause `team_renamed` or `team_deleted` when a team did it.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use sqlx::PgPool;

use super::changes::append;
use super::changes::record::{self, Cause};
use super::entry_owners::OwnerContext;
use super::{repos, RegistryError};
use crate::directory::follow::{self, Changed};
use crate::directory::OwnersMode;
use crate::project::fields::resolved_columns;
use crate::project::ResolvedOwner;
use crate::source::RepoId;

/// How often the directory is looked at for changes to follow.
pub const FOLLOW_INTERVAL: Duration = Duration::from_secs(1);

/// Accounts followed in one pass at most; the rest wait for the next.
const ACCOUNTS_PER_PASS: i64 = 16;

/// Follows directory changes every [`FOLLOW_INTERVAL`] until `stop`.
pub async fn run(pool: PgPool, mode: OwnersMode, stop: impl Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        if let Err(error) = follow_changes(&pool, mode).await {
            tracing::warn!(%error, "could not follow the owners of changed directories");
        }
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(FOLLOW_INTERVAL) => {}
        }
    }
}

/// One pass over the accounts whose directory changed since their owners
/// were followed; how many entries' owners moved.
pub async fn follow_changes(pool: &PgPool, mode: OwnersMode) -> Result<usize, RegistryError> {
    let mut moved = 0;
    for changed in follow::changed(pool, ACCOUNTS_PER_PASS).await? {
        moved += follow_account(pool, &changed, mode).await?;
        follow::followed(pool, &changed).await?;
    }
    Ok(moved)
}

crate::row! {
    /// An entry's owner as stored.
    struct OwnedEntry {
        repo_id: RepoId,
        name: String,
        owner: String,
        resolved: ResolvedOwner as flatten,
    }
}

/// An entry whose owner resolves to something else now.
struct Moved {
    name: String,
    /// The file's text it was resolved from.
    owner: String,
    now: ResolvedOwner,
}

async fn follow_account(
    pool: &PgPool,
    changed: &Changed,
    mode: OwnersMode,
) -> Result<usize, RegistryError> {
    let installation = changed.installation_id;
    let mut conn = pool.acquire().await?;
    let entries: Vec<OwnedEntry> = sqlx::query_as(&format!(
        "select e.repo_id, e.name, e.owner, {}
         from entries e join repositories r on r.id = e.repo_id
         where case when $1::bigint is null then r.installation_id is null
                    else r.installation_id = $1 end
         order by e.repo_id, e.name",
        resolved_columns()
    ))
    .bind(changed.installation_id)
    .fetch_all(&mut *conn)
    .await?;
    let owners: Vec<&str> = entries
        .iter()
        .map(|e| e.owner.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let context = OwnerContext::of_account(&mut conn, installation, mode, &owners).await?;
    drop(conn);
    let resolved: BTreeMap<&str, ResolvedOwner> = owners
        .iter()
        .copied()
        .zip(context.resolve(&owners))
        .collect();
    let mut moved: BTreeMap<RepoId, Vec<Moved>> = BTreeMap::new();
    for entry in &entries {
        let Some(now) = resolved.get(entry.owner.as_str()) else {
            continue;
        };
        if *now != entry.resolved {
            moved.entry(entry.repo_id).or_default().push(Moved {
                name: entry.name.clone(),
                owner: entry.owner.clone(),
                now: now.clone(),
            });
        }
    }
    let mut count = 0;
    for (repo, entries) in moved {
        count += follow_repo(pool, repo, &entries).await?;
    }
    Ok(count)
}

/// Writes the owners that moved in one repository, with their changes, in
/// one transaction under the repository's lock. An entry whose owner text
/// changed since it was read is left to the reconcile that changed it.
async fn follow_repo(pool: &PgPool, repo: RepoId, moved: &[Moved]) -> Result<usize, RegistryError> {
    let mut tx = pool.begin().await?;
    if repos::lock(&mut tx, repo).await?.is_none() {
        return Ok(0);
    }
    let before = record::snapshot(&mut tx, repo).await?;
    let columns = resolved_columns();
    for entry in moved {
        let now = serde_json::to_value(&entry.now).unwrap_or_default();
        sqlx::query(&format!(
            "update entries set ({columns}) =
                 (select {columns} from jsonb_populate_record(null::entries, $4)),
                 updated_at = now()
             where repo_id = $1 and name = $2 and owner = $3"
        ))
        .bind(repo)
        .bind(&entry.name)
        .bind(&entry.owner)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    let after = record::snapshot(&mut tx, repo).await?;
    let mut changes = record::diff(&before, &after, repo, None, Cause::Reconcile);
    for change in &mut changes {
        change.cause = Cause::of_owner(change.after.as_ref());
    }
    append::append(&mut tx, &changes).await?;
    tx.commit().await?;
    Ok(changes.len())
}
