//! The organisation's directory from GitHub: its teams and members, read by
//! GraphQL 100 a page (`page.rs`), with the listing and whenever a `team`,
//! `membership` or `organization` webhook asks (a re-read of the latest
//! state, never the payload's: a read wins over webhooks that arrive late).
//!
//! Each page is written as it arrives; a read that stops part-way marks
//! nothing deleted. GitHub refusing the teams (the App lacks `members:
//! read`: a 403, or a `FORBIDDEN` error) turns owner checking off for that
//! installation, said once in the log and recorded for the dashboard.

use std::sync::Arc;
use std::time::Duration;

use super::auth::Installation;
use super::client::Client;
use super::http::CallError;
use crate::directory::db::Account;
use crate::directory::DirectoryDb;
use crate::source::InstallationId;

mod page;

use page::Refused;
pub use page::{READ_MEMBERS, READ_TEAMS};

/// At most this many pages (100 teams or members each) per read.
const MAX_PAGES: usize = 1_000;

/// How many requested re-reads one pass claims.
const CLAIM_LIMIT: i64 = 10;

/// How long a replica holds an account it is reading.
const CLAIM_LEASE: Duration = Duration::from_secs(300);

/// When a failed re-read is tried again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// How often the loop looks for requested re-reads.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Why a directory read did not finish.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("directory database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("GitHub's answer about {login}: {message}")]
    Answer { login: String, message: String },
}

/// Reads directories from GitHub into the database.
#[derive(Debug, Clone)]
pub struct DirectoryReader {
    client: Arc<Client>,
}

impl DirectoryReader {
    pub(crate) fn new(client: Arc<Client>) -> Self {
        Self { client }
    }

    fn db(&self) -> &DirectoryDb {
        &self.client.directory
    }

    /// Reads an installation's account with the listing: teams and members
    /// of an organisation; a personal account is only made known. Failures
    /// are logged and recorded, never passed on: the listing goes on.
    pub async fn read_installation(&self, installation: &Installation) {
        let Some(org_id) = installation.account_id else {
            return;
        };
        let account = Account {
            org_id,
            login: installation.account.clone(),
            installation_id: Some(installation.id),
            personal: !installation.organization,
        };
        if let Err(error) = self.db().ensure_account(&account).await {
            tracing::warn!(installation = %installation.id, %error, "could not record the account");
            return;
        }
        if account.personal || installation.suspended {
            return;
        }
        self.read_and_record(&account, true, true).await;
    }

    /// Reads, then records the outcome on the account; true when it worked.
    async fn read_and_record(&self, account: &Account, teams: bool, members: bool) -> bool {
        let outcome = self.read(account, teams, members).await;
        let error = outcome.as_ref().err().map(ToString::to_string);
        if let Some(error) = &error {
            tracing::warn!(account = %account.login, %error, "could not read the organisation's teams and members");
        }
        if let Err(db_error) = self
            .db()
            .record_error(account.org_id, error.as_deref())
            .await
        {
            tracing::warn!(account = %account.login, error = %db_error, "could not record the directory read");
        }
        outcome.is_ok()
    }

    /// Reads `account`'s teams and/or members, every page.
    pub async fn read(
        &self,
        account: &Account,
        teams: bool,
        members: bool,
    ) -> Result<(), DirectoryError> {
        let Some(installation) = account.installation_id else {
            return Ok(());
        };
        // While owner checking is off, any read is a read of both: only
        // both answering turns it on again. Members come first, as the
        // teams' read finishing is what turns it on.
        let both = self.db().is_off(account.org_id).await?;
        if members || both {
            if let Err(refused) = self.read_members(installation, account).await {
                return self.refused(account, installation, refused).await;
            }
        }
        if teams || both {
            if let Err(refused) = self.read_teams(installation, account).await {
                return self.refused(account, installation, refused).await;
            }
        }
        Ok(())
    }

    /// A read GitHub refused (no `members: read`) turns owner checking off,
    /// said once in the log; any other failure is passed on.
    async fn refused(
        &self,
        account: &Account,
        installation: InstallationId,
        refused: Refused,
    ) -> Result<(), DirectoryError> {
        let reason = match refused {
            Refused::Forbidden(reason) => reason,
            Refused::Other(error) => return Err(error),
        };
        if self.db().turn_off(account.org_id, &reason).await? {
            tracing::warn!(account = %account.login, %installation, %reason,
                "GitHub refused to show the organisation's teams or members: owner checking is off for this installation until the App has the members: read permission (docs/github-app.md)");
        }
        Ok(())
    }

    async fn read_teams(
        &self,
        installation: InstallationId,
        account: &Account,
    ) -> Result<(), Refused> {
        let started = self
            .db()
            .read_started()
            .await
            .map_err(DirectoryError::from)?;
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let (teams, next) = page::teams(&self.client, installation, account, after).await?;
            self.db()
                .put_teams(account.org_id, &teams, started)
                .await
                .map_err(DirectoryError::from)?;
            match next {
                Some(cursor) => after = Some(cursor),
                None => {
                    self.db()
                        .finish_teams(account.org_id, started)
                        .await
                        .map_err(DirectoryError::from)?;
                    return Ok(());
                }
            }
        }
        Err(too_many(account))
    }

    async fn read_members(
        &self,
        installation: InstallationId,
        account: &Account,
    ) -> Result<(), Refused> {
        let started = self
            .db()
            .read_started()
            .await
            .map_err(DirectoryError::from)?;
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let (members, next) = page::members(&self.client, installation, account, after).await?;
            self.db()
                .put_members(account.org_id, &members, started)
                .await
                .map_err(DirectoryError::from)?;
            match next {
                Some(cursor) => after = Some(cursor),
                None => {
                    self.db()
                        .finish_members(account.org_id, started)
                        .await
                        .map_err(DirectoryError::from)?;
                    return Ok(());
                }
            }
        }
        Err(too_many(account))
    }

    /// Reads the accounts webhooks asked about until `stop`, one pass every
    /// [`POLL_INTERVAL`].
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            if let Err(error) = self.pass().await {
                tracing::warn!(%error, "could not read the requested directories");
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
    }

    /// One pass: the requested re-reads claimed now; how many there were.
    pub async fn pass(&self) -> Result<usize, sqlx::Error> {
        let claimed = self.db().claim_requested(CLAIM_LIMIT, CLAIM_LEASE).await?;
        for requested in &claimed {
            let ok = self
                .read_and_record(&requested.account, requested.teams, requested.members)
                .await;
            let retry = if ok {
                POLL_INTERVAL
            } else {
                RETRY_AFTER_FAILURE
            };
            self.db().release(requested.account.org_id, retry).await?;
        }
        Ok(claimed.len())
    }
}

fn too_many(account: &Account) -> Refused {
    Refused::Other(DirectoryError::Answer {
        login: account.login.clone(),
        message: format!("more than {MAX_PAGES} pages"),
    })
}
