//! The local folder's directory: the account it is kept under and its
//! replacement, in one transaction, by what `teams.yaml` says, or owner
//! checking turned off when there is no such file.

use chrono::{DateTime, Utc};

use super::accounts::ensure_account_in;
use super::pages::{finish_in, put_in};
use super::{Account, DirectoryDb};
use crate::directory::{Part, Rows, TeamsFile, LOCAL_LOGIN, LOCAL_ORG_ID};

/// The local folder as an account.
pub fn local_account() -> Account {
    Account {
        org_id: LOCAL_ORG_ID,
        login: LOCAL_LOGIN.to_owned(),
        installation_id: None,
        personal: false,
    }
}

impl DirectoryDb {
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
            put_in(&mut tx, LOCAL_ORG_ID, Rows::Teams(page), started).await?;
        }
        finish_in(&mut tx, LOCAL_ORG_ID, Part::Teams, started).await?;
        for page in file.members.chunks(1000) {
            put_in(&mut tx, LOCAL_ORG_ID, Rows::Members(page), started).await?;
        }
        finish_in(&mut tx, LOCAL_ORG_ID, Part::Members, started).await?;
        sqlx::query("update directory_orgs set read_error = null where org_id = $1")
            .bind(LOCAL_ORG_ID)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }

    /// Records that the folder has no `teams.yaml`: owner checking is off
    /// for it (`reason` says why), so its owners are `unchecked`. The
    /// teams a former file named are kept, as a refused file keeps them,
    /// until a file is read again.
    pub async fn turn_off_local(&self, reason: &str) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        ensure_account_in(&mut tx, &local_account()).await?;
        sqlx::query(
            "update directory_orgs set off_reason = $2, off_since = coalesce(off_since, now()),
                 read_error = null
             where org_id = $1",
        )
        .bind(LOCAL_ORG_ID)
        .bind(reason)
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
}
