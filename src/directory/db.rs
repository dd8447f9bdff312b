//! Every statement on the directory's tables (`directory_orgs`,
//! `directory_org_logins`, `directory_teams`, `directory_team_slugs`,
//! `directory_members`).
//!
//! A read of an account's teams (or members) writes each page as it
//! arrives, stamped with the read's start; only a read that finished marks
//! what it did not see (a team as deleted, a member as gone), so a read
//! that stopped part-way loses nothing, and 10,000 teams never sit in
//! memory at once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Row};

use crate::installation_id::InstallationId;

use super::{Directory, KnownTeam, Member, Team, TeamsFile, Unchecked, LOCAL_LOGIN, LOCAL_ORG_ID};

/// An account whose directory Roster reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// GitHub's account id ([`LOCAL_ORG_ID`] for the local folder).
    pub org_id: i64,
    pub login: String,
    pub installation_id: Option<InstallationId>,
    /// A personal account: no teams to read.
    pub personal: bool,
}

/// A re-read a webhook asked for, claimed by one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    pub account: Account,
    pub teams: bool,
    pub members: bool,
}

/// What the dashboard and the API show about an account's directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AccountStatus {
    pub org_id: i64,
    pub login: String,
    pub installation_id: Option<InstallationId>,
    pub personal: bool,
    /// Why owners of this account are not checked, when they are not.
    pub off_reason: Option<String>,
    /// The last read that failed, or a `teams.yaml` that was refused.
    pub read_error: Option<String>,
    pub teams_read_at: Option<DateTime<Utc>>,
    pub members_read_at: Option<DateTime<Utc>>,
}

/// The directory's tables, through one pool.
#[derive(Debug, Clone)]
pub struct DirectoryDb {
    pool: PgPool,
}

impl DirectoryDb {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Makes `account` known, or refreshes its login (the old one is kept,
    /// so `@old/team` still resolves).
    pub async fn ensure_account(&self, account: &Account) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        ensure_account_in(&mut tx, account).await?;
        tx.commit().await
    }

    /// The start of a read: what it did not see is older than this.
    pub async fn read_started(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        sqlx::query_scalar("select clock_timestamp()")
            .fetch_one(&self.pool)
            .await
    }

    /// Writes one page of a read of `org`'s teams.
    pub async fn put_teams(
        &self,
        org: i64,
        teams: &[Team],
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        put_teams_in(&mut conn, org, teams, started).await
    }

    /// A read of `org`'s teams finished: teams it did not see are deleted
    /// (kept, flagged), and owner checking is on again.
    pub async fn finish_teams(&self, org: i64, started: DateTime<Utc>) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        finish_teams_in(&mut conn, org, started).await
    }

    /// Writes one page of a read of `org`'s members.
    pub async fn put_members(
        &self,
        org: i64,
        members: &[Member],
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        put_members_in(&mut conn, org, members, started).await
    }

    /// A read of `org`'s members finished: members it did not see are gone.
    pub async fn finish_members(
        &self,
        org: i64,
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        finish_members_in(&mut conn, org, started).await
    }

    /// Turns owner checking off for `org`; true the first time, so that
    /// the caller says it once.
    pub async fn turn_off(&self, org: i64, reason: &str) -> Result<bool, sqlx::Error> {
        let changed = sqlx::query(
            "update directory_orgs set off_reason = $2, off_since = now(),
                 teams_requested_at = null, members_requested_at = null
             where org_id = $1 and off_since is null",
        )
        .bind(org)
        .bind(reason)
        .execute(&self.pool)
        .await?;
        Ok(changed.rows_affected() > 0)
    }

    /// Whether owner checking is off for `org` (GitHub refused its teams
    /// or members).
    pub async fn is_off(&self, org: i64) -> Result<bool, sqlx::Error> {
        let off: Option<bool> = sqlx::query_scalar(
            "select off_since is not null from directory_orgs where org_id = $1",
        )
        .bind(org)
        .fetch_optional(&self.pool)
        .await?;
        Ok(off.unwrap_or(false))
    }

    /// Records the last read's failure (`None`: it worked).
    pub async fn record_error(&self, org: i64, error: Option<&str>) -> Result<(), sqlx::Error> {
        sqlx::query("update directory_orgs set read_error = $2 where org_id = $1")
            .bind(org)
            .bind(error)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Replaces the local folder's directory with what `teams.yaml` says,
    /// in one transaction.
    pub async fn replace_local(&self, file: &TeamsFile) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let account = local_account();
        ensure_account_in(&mut tx, &account).await?;
        let started: DateTime<Utc> = sqlx::query_scalar("select clock_timestamp()")
            .fetch_one(&mut *tx)
            .await?;
        for page in file.teams.chunks(1000) {
            put_teams_in(&mut tx, LOCAL_ORG_ID, page, started).await?;
        }
        finish_teams_in(&mut tx, LOCAL_ORG_ID, started).await?;
        for page in file.members.chunks(1000) {
            put_members_in(&mut tx, LOCAL_ORG_ID, page, started).await?;
        }
        finish_members_in(&mut tx, LOCAL_ORG_ID, started).await?;
        sqlx::query("update directory_orgs set read_error = null where org_id = $1")
            .bind(LOCAL_ORG_ID)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    /// Records that the local `teams.yaml` was refused (the directory is
    /// kept as it was).
    pub async fn record_local_error(&self, error: &str) -> Result<(), sqlx::Error> {
        self.ensure_account(&local_account()).await?;
        self.record_error(LOCAL_ORG_ID, Some(error)).await
    }

    /// Claims up to `limit` accounts whose re-read a webhook asked for,
    /// for `lease` (another replica takes them after it).
    pub async fn claim_requested(
        &self,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<Requested>, sqlx::Error> {
        let rows = sqlx::query(
            "update directory_orgs o set claimed_until = now() + make_interval(secs => $2)
             from (select org_id from directory_orgs
                   where (teams_requested_at is not null or members_requested_at is not null)
                     and (claimed_until is null or claimed_until < now())
                   order by least(teams_requested_at, members_requested_at)
                   limit $1 for update skip locked) due
             where o.org_id = due.org_id
             returning o.org_id, o.login, o.installation_id, o.personal,
                       o.teams_requested_at is not null as teams,
                       o.members_requested_at is not null as members",
        )
        .bind(limit)
        .bind(lease.as_secs_f64())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Requested {
                    account: Account {
                        org_id: row.try_get("org_id")?,
                        login: row.try_get("login")?,
                        installation_id: row.try_get("installation_id")?,
                        personal: row.try_get("personal")?,
                    },
                    teams: row.try_get("teams")?,
                    members: row.try_get("members")?,
                })
            })
            .collect()
    }

    /// Ends a claim; a request that is still there (it came during the
    /// read, or the read failed) is claimed again after `retry`.
    pub async fn release(&self, org: i64, retry: Duration) -> Result<(), sqlx::Error> {
        sqlx::query(
            "update directory_orgs set claimed_until = case
                 when teams_requested_at is null and members_requested_at is null then null
                 else now() + make_interval(secs => $2) end
             where org_id = $1",
        )
        .bind(org)
        .bind(retry.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

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

    /// Every account's status, by login.
    pub async fn accounts(&self) -> Result<Vec<AccountStatus>, sqlx::Error> {
        let rows = sqlx::query(
            "select org_id, login, installation_id, personal, off_reason, read_error,
                    teams_read_at, members_read_at
             from directory_orgs order by lower(login), org_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AccountStatus {
                    org_id: row.try_get("org_id")?,
                    login: row.try_get("login")?,
                    installation_id: row.try_get("installation_id")?,
                    personal: row.try_get("personal")?,
                    off_reason: row.try_get("off_reason")?,
                    read_error: row.try_get("read_error")?,
                    teams_read_at: row.try_get("teams_read_at")?,
                    members_read_at: row.try_get("members_read_at")?,
                })
            })
            .collect()
    }
}

/// The local folder as an account.
pub fn local_account() -> Account {
    Account {
        org_id: LOCAL_ORG_ID,
        login: LOCAL_LOGIN.to_owned(),
        installation_id: None,
        personal: false,
    }
}

/// Asks, in the caller's transaction (a webhook's intake), for a re-read
/// of `org`'s teams and/or members. False when Roster does not know the
/// account (its installation's listing reads it first).
pub async fn request_read_in(
    conn: &mut PgConnection,
    org: i64,
    teams: bool,
    members: bool,
) -> Result<bool, sqlx::Error> {
    let known = sqlx::query(
        "update directory_orgs set
             teams_requested_at = case when $2 then clock_timestamp() else teams_requested_at end,
             members_requested_at = case when $3 then clock_timestamp() else members_requested_at end
         where org_id = $1 and not personal",
    )
    .bind(org)
    .bind(teams)
    .bind(members)
    .execute(&mut *conn)
    .await?;
    Ok(known.rows_affected() > 0)
}

/// Records, in the caller's transaction, that account `org` is now called
/// `login`. False when Roster does not know the account.
pub async fn rename_in(
    conn: &mut PgConnection,
    org: i64,
    login: &str,
) -> Result<bool, sqlx::Error> {
    let current: Option<String> =
        sqlx::query_scalar("select login from directory_orgs where org_id = $1 for update")
            .bind(org)
            .fetch_optional(&mut *conn)
            .await?;
    let Some(current) = current else {
        return Ok(false);
    };
    set_login_in(conn, org, Some(&current), login).await?;
    Ok(true)
}

async fn ensure_account_in(conn: &mut PgConnection, account: &Account) -> Result<(), sqlx::Error> {
    let before: Option<String> = sqlx::query_scalar(
        "insert into directory_orgs (org_id, login, installation_id, personal)
         values ($1, $2, $3, $4)
         on conflict (org_id) do update set installation_id = excluded.installation_id,
             personal = excluded.personal
         returning (select login from directory_orgs where org_id = $1)",
    )
    .bind(account.org_id)
    .bind(&account.login)
    .bind(account.installation_id)
    .bind(account.personal)
    .fetch_one(&mut *conn)
    .await?;
    set_login_in(conn, account.org_id, before.as_deref(), &account.login).await
}

/// Sets the login, remembering the one it replaces.
async fn set_login_in(
    conn: &mut PgConnection,
    org: i64,
    before: Option<&str>,
    login: &str,
) -> Result<(), sqlx::Error> {
    let Some(before) = before.filter(|b| !b.eq_ignore_ascii_case(login)) else {
        if before.is_some() {
            sqlx::query("update directory_orgs set login = $2 where org_id = $1")
                .bind(org)
                .bind(login)
                .execute(&mut *conn)
                .await?;
        }
        return Ok(());
    };
    sqlx::query(
        "insert into directory_org_logins (org_id, login_lower) values ($1, lower($2))
         on conflict do nothing",
    )
    .bind(org)
    .bind(before)
    .execute(&mut *conn)
    .await?;
    sqlx::query("delete from directory_org_logins where org_id = $1 and login_lower = lower($2)")
        .bind(org)
        .bind(login)
        .execute(&mut *conn)
        .await?;
    sqlx::query("update directory_orgs set login = $2 where org_id = $1")
        .bind(org)
        .bind(login)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn put_teams_in(
    conn: &mut PgConnection,
    org: i64,
    teams: &[Team],
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if teams.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = teams.iter().map(|t| t.id).collect();
    let slugs: Vec<&str> = teams.iter().map(|t| t.slug.as_str()).collect();
    let names: Vec<&str> = teams.iter().map(|t| t.name.as_str()).collect();
    let parents: Vec<Option<i64>> = teams.iter().map(|t| t.parent_id).collect();
    let secret: Vec<bool> = teams.iter().map(|t| t.secret).collect();
    sqlx::query(
        "insert into directory_teams (org_id, team_id, slug, name, parent_id, secret, seen_at)
         select $1, id, slug, name, parent, secret, $7
         from unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bool[])
              as t(id, slug, name, parent, secret)
         on conflict (org_id, team_id) do update set slug = excluded.slug, name = excluded.name,
             parent_id = excluded.parent_id, secret = excluded.secret,
             seen_at = excluded.seen_at, deleted_at = null",
    )
    .bind(org)
    .bind(&ids)
    .bind(&slugs)
    .bind(&names)
    .bind(&parents)
    .bind(&secret)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into directory_team_slugs (org_id, slug_lower, team_id)
         select $1, lower(slug), id from unnest($2::text[], $3::bigint[]) as t(slug, id)
         on conflict (org_id, slug_lower) do update set team_id = excluded.team_id",
    )
    .bind(org)
    .bind(&slugs)
    .bind(&ids)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn finish_teams_in(
    conn: &mut PgConnection,
    org: i64,
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update directory_teams set deleted_at = now()
         where org_id = $1 and seen_at < $2 and deleted_at is null",
    )
    .bind(org)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "update directory_orgs set teams_read_at = now(), off_reason = null, off_since = null,
             read_error = null,
             teams_requested_at = case when teams_requested_at <= $2 then null
                                       else teams_requested_at end
         where org_id = $1",
    )
    .bind(org)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn put_members_in(
    conn: &mut PgConnection,
    org: i64,
    members: &[Member],
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if members.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = members.iter().map(|m| m.id).collect();
    let logins: Vec<&str> = members.iter().map(|m| m.login.as_str()).collect();
    sqlx::query(
        "insert into directory_members (org_id, user_id, login, seen_at)
         select $1, id, login, $4 from unnest($2::bigint[], $3::text[]) as m(id, login)
         on conflict (org_id, user_id) do update set login = excluded.login,
             seen_at = excluded.seen_at",
    )
    .bind(org)
    .bind(&ids)
    .bind(&logins)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn finish_members_in(
    conn: &mut PgConnection,
    org: i64,
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query("delete from directory_members where org_id = $1 and seen_at < $2")
        .bind(org)
        .bind(started)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "update directory_orgs set members_read_at = now(),
             members_requested_at = case when members_requested_at <= $2 then null
                                         else members_requested_at end
         where org_id = $1",
    )
    .bind(org)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    Ok(())
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
    let teams = sqlx::query(
        "select team_id, slug, name, parent_id, secret, deleted_at is not null as deleted
         from directory_teams where org_id = $1 order by team_id",
    )
    .bind(org)
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(|row| {
        Ok(KnownTeam {
            team: Team {
                id: row.try_get("team_id")?,
                slug: row.try_get("slug")?,
                name: row.try_get("name")?,
                parent_id: row.try_get("parent_id")?,
                secret: row.try_get("secret")?,
            },
            deleted: row.try_get("deleted")?,
        })
    })
    .collect::<Result<Vec<_>, sqlx::Error>>()?;
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
