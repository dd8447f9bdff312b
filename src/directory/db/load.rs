//! One account's whole directory loaded at once, by id or by a login it has
//! or had: what the resolver reads.

use std::collections::HashSet;

use sqlx::{PgConnection, Row};

use super::DirectoryDb;
use crate::directory::{lookup, Directory, KnownTeam, Member, Unchecked};

impl DirectoryDb {
    /// One account's whole directory, by id.
    pub async fn load(&self, org: i64) -> Result<Option<Directory>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        load_in(&mut conn, org).await
    }

    /// One account's whole directory, by a login it has or had.
    pub async fn load_by_login(&self, login: &str) -> Result<Option<Directory>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let org: Option<i64> = sqlx::query_scalar(
            "select org_id from directory_orgs where lower(login) = lower($1)
             union all
             select org_id from directory_org_logins where login_lower = lower($1)
             limit 1",
        )
        .bind(login)
        .fetch_optional(&mut *conn)
        .await?;
        match org {
            Some(org) => load_in(&mut conn, org).await,
            None => Ok(None),
        }
    }

    /// The teams of these ids, of any account, deleted ones included: what
    /// an export says of the teams that own its entries (their names and
    /// parents).
    pub async fn teams_by_id(&self, ids: &[i64]) -> Result<Vec<KnownTeam>, sqlx::Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        sqlx::query_as(
            "select team_id as id, slug, name, parent_id, secret, deleted_at is not null as deleted
             from directory_teams where team_id = any($1) order by team_id, org_id",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await
    }

    /// The ids of every secret team of every account, deleted or not: what
    /// a reader without credentials may not learn of (docs/contract.md#what-a-reader-without-credentials-sees).
    pub async fn secret_team_ids(&self) -> Result<HashSet<i64>, sqlx::Error> {
        let ids: Vec<i64> = sqlx::query_scalar("select team_id from directory_teams where secret")
            .fetch_all(&self.pool)
            .await?;
        Ok(ids.into_iter().collect())
    }
}

async fn load_in(conn: &mut PgConnection, org: i64) -> Result<Option<Directory>, sqlx::Error> {
    let Some(row) =
        sqlx::query("select login, personal, off_reason from directory_orgs where org_id = $1")
            .bind(org)
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(None);
    };
    let login: String = row.try_get("login")?;
    let personal: bool = row.try_get("personal")?;
    let off: Option<String> = row.try_get("off_reason")?;
    let former_logins: Vec<String> = sqlx::query_scalar(
        "select login_lower from directory_org_logins where org_id = $1 order by login_lower",
    )
    .bind(org)
    .fetch_all(&mut *conn)
    .await?;
    let teams = lookup::teams(&mut *conn, org, "true").await?;
    let slugs: Vec<(String, i64)> = sqlx::query_as(
        "select slug_lower, team_id from directory_team_slugs where org_id = $1 order by slug_lower",
    )
    .bind(org)
    .fetch_all(&mut *conn)
    .await?;
    let members: Vec<(i64, String)> = sqlx::query_as(
        "select user_id, login from directory_members where org_id = $1 order by user_id",
    )
    .bind(org)
    .fetch_all(&mut *conn)
    .await?;
    let unchecked = match (personal, off) {
        (true, _) => Some(Unchecked::Personal),
        (false, Some(reason)) => Some(Unchecked::Off(reason)),
        (false, None) => None,
    };
    Ok(Some(Directory {
        org_id: org,
        login,
        former_logins,
        teams,
        slugs,
        members: members
            .into_iter()
            .map(|(id, login)| Member { id, login })
            .collect(),
        unchecked,
    }))
}
