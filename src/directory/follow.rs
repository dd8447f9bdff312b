//! Which accounts' directories changed since their entries' owners were
//! last followed (a team renamed or deleted, a member gone, a first read):
//! `directory_orgs.changed_at` is moved by every change that can move an
//! owner's resolution (migration 0026), `owners_followed_at` by the
//! registry once it has followed it.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::installation_id::InstallationId;

crate::row! {
    /// An account whose owners are to be followed.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Changed {
        pub org_id: i64,
        /// Its installation; `None` for the local folder.
        pub installation_id: Option<InstallationId>,
        /// The change followed: marked as followed once done.
        pub changed_at: DateTime<Utc>,
    }
}

/// Accounts changed since their owners were followed, oldest change first.
pub async fn changed(pool: &PgPool, limit: i64) -> Result<Vec<Changed>, sqlx::Error> {
    sqlx::query_as(
        "select org_id, installation_id, changed_at from directory_orgs
         where owners_followed_at is null or owners_followed_at < changed_at
         order by changed_at limit $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Records that `changed` was followed (a later change is followed again).
pub async fn followed(pool: &PgPool, changed: &Changed) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update directory_orgs set owners_followed_at = $2
         where org_id = $1 and (owners_followed_at is null or owners_followed_at < $2)",
    )
    .bind(changed.org_id)
    .bind(changed.changed_at)
    .execute(pool)
    .await?;
    Ok(())
}
