//! How many entries name each owner text, per repository account: what
//! `/api/v1/owners` resolves against the organisation's directory.

use sqlx::PgPool;

use super::RegistryError;

/// Entries of repositories of `account` whose `owner` is `owner` (as written).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OwnerCount {
    pub account: String,
    pub owner: String,
    pub entries: i64,
}

/// Every (account, owner text) with its number of entries.
pub async fn owner_counts(pool: &PgPool) -> Result<Vec<OwnerCount>, RegistryError> {
    Ok(sqlx::query_as(
        "select r.owner as account, e.owner, count(*) as entries
         from entries e join repositories r on r.id = e.repo_id
         group by r.owner, e.owner",
    )
    .fetch_all(pool)
    .await?)
}
