//! How many entries name each owner text, per repository account: what
//! `/api/v1/owners` resolves against the organisation's directory.

use sqlx::PgPool;

use crate::registry::RegistryError;

crate::row! {
    /// Entries of repositories of `account` whose `owner` is `owner` (as written).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OwnerCount {
        pub account: String,
        pub owner: String,
        pub entries: i64,
    }
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

crate::row! {
    /// An owner text's entries, for the owners page: how many, and the first
    /// few by name with their repositories.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OwnerProjects {
        /// The repositories' account.
        pub account: String,
        /// The owner as the files write it.
        pub owner: String,
        pub entries: i64,
        /// At most the `shown` asked for, by name.
        pub names: Vec<String>,
        /// `owner/name` of each of `names`' repository.
        pub repos: Vec<String>,
    }
}

/// Every (account, owner text) with its number of entries and the first
/// `shown` of them: one row per distinct owner, however many entries.
pub async fn owner_projects(
    pool: &PgPool,
    shown: i32,
) -> Result<Vec<OwnerProjects>, RegistryError> {
    Ok(sqlx::query_as(
        "select account, owner, count(*) as entries,
                (array_agg(name order by name))[1:$1] as names,
                (array_agg(repo order by name))[1:$1] as repos
         from (select r.owner as account, e.owner, e.name, r.owner || '/' || r.name as repo
               from entries e join repositories r on r.id = e.repo_id) named
         group by account, owner
         order by lower(account), lower(owner), owner",
    )
    .bind(shown)
    .fetch_all(pool)
    .await?)
}
