//! The accounts whose directory Roster keeps (`directory_orgs`, and the
//! logins each had in `directory_org_logins`): made known with the listing,
//! renamed by a webhook, owner checking turned off when GitHub refuses the
//! teams, and their status as the dashboard and the API show it.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::DirectoryDb;
use crate::installation_id::InstallationId;

crate::row! {
    /// An account whose directory Roster reads.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Account {
        /// GitHub's account id ([`LOCAL_ORG_ID`](crate::directory::LOCAL_ORG_ID) for the local folder).
        pub org_id: i64,
        pub login: String,
        pub installation_id: Option<InstallationId>,
        /// A personal account: no teams to read.
        pub personal: bool,
    }
}

crate::row! {
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
}

impl DirectoryDb {
    /// Makes `account` known, or refreshes its login (the old one is kept,
    /// so `@old/team` still resolves).
    pub async fn ensure_account(&self, account: &Account) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        ensure_account_in(&mut tx, account).await?;
        tx.commit().await
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

    /// Every account's status, by login.
    pub async fn accounts(&self) -> Result<Vec<AccountStatus>, sqlx::Error> {
        sqlx::query_as(
            "select org_id, login, installation_id, personal, off_reason, read_error,
                    teams_read_at, members_read_at
             from directory_orgs order by lower(login), org_id",
        )
        .fetch_all(&self.pool)
        .await
    }
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

pub(super) async fn ensure_account_in(
    conn: &mut PgConnection,
    account: &Account,
) -> Result<(), sqlx::Error> {
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
