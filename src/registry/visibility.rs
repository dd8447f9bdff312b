//! Whether GitHub says each repository is public, as the listing reads it
//! (GraphQL's `isPrivate`, beside every repository it lists, at no extra
//! cost): a public repository's check names only what public repositories
//! hold (docs/contract.md#relations), and without this it knew only the
//! repositories whose pull requests it had seen.
//!
//! Kept in `repo_visibility`, the table a pull request's payload writes
//! too, by repository id: a repository's first listing page is read before
//! its row in `repositories` exists.

use std::collections::BTreeMap;

use sqlx::PgExecutor;

use super::RegistryError;
use crate::source::RepoId;

/// Records whether each repository is public (`true`) or private.
pub async fn record_visibility<'e, E>(
    executor: E,
    seen: &[(RepoId, bool)],
) -> Result<(), RegistryError>
where
    E: PgExecutor<'e>,
{
    // One per id, in id order so that concurrent writers lock in one order.
    let unique: BTreeMap<i64, bool> = seen.iter().map(|(id, public)| (id.0, *public)).collect();
    if unique.is_empty() {
        return Ok(());
    }
    let (ids, public): (Vec<i64>, Vec<bool>) = unique.into_iter().unzip();
    sqlx::query(
        "insert into repo_visibility (repo_id, public)
         select * from unnest($1::bigint[], $2::bool[])
         on conflict (repo_id) do update set public = excluded.public, seen_at = now()
         where repo_visibility.public is distinct from excluded.public",
    )
    .bind(ids)
    .bind(public)
    .execute(executor)
    .await?;
    Ok(())
}
