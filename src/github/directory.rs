//! The organisation's directory from GitHub: its teams and members, read
//! whole by GraphQL 100 a page (`page.rs`) with the listing, and kept
//! current by what `team`, `membership` and `organization` webhooks say
//! about one team or member: the loop here writes what the payload said,
//! and reads that one team (`team_read.rs`) only when the payload is not
//! enough. A webhook never costs a read of the whole organisation.
//!
//! Whole reads (the listing's, or a repair) take their share of the
//! GraphQL budget like the checks ([`super::budget_share`]): a page is sent
//! only above the sync's reserve, otherwise the read is put off until the
//! window resets. A read that fails is tried again after a backoff
//! ([`read_backoff`]: 30 s doubling to an hour), never at a fixed pace.
//!
//! Each page is written as it arrives; a read that stops part-way marks
//! nothing deleted. A team or member whose name PostgreSQL cannot store
//! (it holds a NUL) is skipped with a warning. GitHub refusing the teams
//! (the App lacks `members: read`: a 403, or a `FORBIDDEN` error) turns
//! owner checking off for that installation, said once in the log and
//! recorded for the dashboard.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::auth::Installation;
use super::client::Client;
use super::http::CallError;
use super::rate_limit::Resource;
use crate::controller::Backoff;
use crate::directory::db::{Account, Requested};
use crate::directory::{DirectoryDb, Part, Rows};
use crate::source::InstallationId;

mod page;
mod team_read;

use page::Refused;
pub use page::{READ_MEMBERS, READ_TEAMS};
pub use team_read::READ_TEAM;

/// At most this many pages (100 teams or members each) per read.
const MAX_PAGES: usize = 1_000;

/// How many requested re-reads one pass claims.
const CLAIM_LIMIT: i64 = 10;

/// How long a replica holds an account it is reading.
const CLAIM_LEASE: Duration = Duration::from_secs(300);

/// How many teams one read asks for by id (GitHub's `nodes` takes 100).
const TEAMS_PER_READ: i64 = 100;

/// When a whole read or a team's read that failed is tried again: 30 s
/// after the first failure, doubling to an hour, so a read GitHub keeps
/// failing costs a few reads an hour, not one every 30 s.
pub fn read_backoff() -> Backoff {
    Backoff {
        base: Duration::from_secs(30),
        cap: Duration::from_secs(3_600),
        jitter: 0.2,
    }
}

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
    /// What is left of the budget is kept for the sync until `until`.
    #[error("the GraphQL budget is kept for the sync until the window resets")]
    Held { until: SystemTime },
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
    /// are logged and recorded, never passed on: the listing goes on, and
    /// the read is tried again after its backoff.
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
        // Not while another replica reads it, a failed read backs off or
        // the budget is kept for the sync: the read asked then comes at
        // its time.
        match self.db().claim_account(org_id, CLAIM_LEASE).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(account = %account.login, "the directory's read waits for its time");
                return;
            }
            Err(error) => {
                tracing::warn!(account = %account.login, %error, "could not claim the directory's read");
                return;
            }
        }
        self.read_and_record(&account, true, true).await;
    }

    /// Reads, then records the outcome on the account: a failure is
    /// tried again after [`read_backoff`], a read the budget held back once
    /// the window resets; true when it worked.
    async fn read_and_record(&self, account: &Account, teams: bool, members: bool) -> bool {
        let outcome = self.read(account, teams, members).await;
        if let Err(error) = self.record(account, teams, members, &outcome).await {
            tracing::warn!(account = %account.login, %error, "could not record the directory read");
        }
        outcome.is_ok()
    }

    async fn record(
        &self,
        account: &Account,
        teams: bool,
        members: bool,
        outcome: &Result<(), DirectoryError>,
    ) -> Result<(), sqlx::Error> {
        let org = account.org_id;
        match outcome {
            Ok(()) => {
                self.db().record_error(org, None).await?;
                self.db().count_read(org, true).await?;
                self.db().release(org, POLL_INTERVAL).await
            }
            Err(DirectoryError::Held { until }) => {
                let wait = until.duration_since(SystemTime::now()).unwrap_or_default();
                tracing::info!(account = %account.login, wait_s = wait.as_secs(),
                    "the organisation's teams and members are read once the budget kept for the sync resets");
                self.db().request_after(org, teams, members, wait).await
            }
            Err(error) => {
                let failures = self.db().count_read(org, false).await?;
                let wait = read_backoff().delay(failures);
                tracing::warn!(account = %account.login, %error, failures, retry_s = wait.as_secs(),
                    "could not read the organisation's teams and members");
                self.db()
                    .record_error(org, Some(&error.to_string()))
                    .await?;
                self.db().request_after(org, teams, members, wait).await
            }
        }
    }

    /// Takes one GraphQL request of the budget for a directory read, or
    /// says until when the rest is kept for the sync.
    fn take_share(&self, installation: InstallationId) -> Result<(), DirectoryError> {
        let pages = self.client.listing_pages(installation);
        let repositories = u64::try_from(pages).unwrap_or(u64::MAX).saturating_mul(100);
        super::budget_share::take(&self.client, installation, Resource::Graphql, repositories)
            .map_err(|until| DirectoryError::Held { until })
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
            if let Err(refused) = self.read_part(Part::Members, installation, account).await {
                return self.refused(account, installation, refused).await;
            }
        }
        if teams || both {
            if let Err(refused) = self.read_part(Part::Teams, installation, account).await {
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

    /// Reads one part of `account`'s directory, every page: each page is
    /// written as it comes, and only the read's end marks what it did not
    /// see.
    async fn read_part(
        &self,
        part: Part,
        installation: InstallationId,
        account: &Account,
    ) -> Result<(), Refused> {
        let (db, org) = (self.db(), account.org_id);
        let started = db.read_started().await.map_err(DirectoryError::from)?;
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            self.take_share(installation)?;
            let next = match part {
                Part::Teams => {
                    let page = page::teams(&self.client, installation, account, after).await?;
                    db.put(org, Rows::Teams(&page.teams), started)
                        .await
                        .map_err(DirectoryError::from)?;
                    db.touch_teams(org, &page.skipped, started)
                        .await
                        .map_err(DirectoryError::from)?;
                    page.next
                }
                Part::Members => {
                    let (members, next) =
                        page::members(&self.client, installation, account, after).await?;
                    db.put(org, Rows::Members(&members), started)
                        .await
                        .map_err(DirectoryError::from)?;
                    next
                }
            };
            if next.is_none() {
                let finished = db.finish(org, part, started).await;
                return finished.map_err(|e| DirectoryError::from(e).into());
            }
            after = next;
        }
        Err(too_many(account))
    }

    /// Keeps the directories current until `stop`, one pass every
    /// [`POLL_INTERVAL`].
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            if let Err(error) = self.pass().await {
                tracing::warn!(%error, "could not bring the directories up to date");
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
    }

    /// One pass: what webhooks said is written, the teams whose payload
    /// was not enough are read, then the whole reads asked for; how many
    /// changes, teams and accounts it took.
    pub async fn pass(&self) -> Result<usize, sqlx::Error> {
        let applied = self.db().apply_changes().await?;
        let teams = self.read_teams_alone().await?;
        let claimed = self
            .db()
            .claim::<Requested>(CLAIM_LIMIT, CLAIM_LEASE)
            .await?;
        for requested in &claimed {
            self.read_and_record(&requested.account, requested.teams, requested.members)
                .await;
        }
        Ok(applied + teams + claimed.len())
    }
}

fn too_many(account: &Account) -> Refused {
    Refused::Other(DirectoryError::Answer {
        login: account.login.clone(),
        message: format!("more than {MAX_PAGES} pages"),
    })
}
