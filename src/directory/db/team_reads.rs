//! Teams read from GitHub on their own (rows of `directory_changes` whose
//! payload is written but whose deliveries coalesced, or whose payload
//! lacked what the directory keeps): claimed by one replica, finished with
//! what the read found, put off while the budget is kept for the sync or
//! after a failure (the row counts its failures for the backoff).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::changes::changed_in;
use super::{Claimed, DirectoryDb};
use crate::directory::{Rows, Team};
use crate::installation_id::InstallationId;

crate::row! {
    /// A team to read from GitHub on its own, claimed by one replica.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TeamToRead {
        pub org_id: i64,
        pub team_id: i64,
        pub node_id: Option<String>,
        pub installation_id: Option<InstallationId>,
        /// Consecutive failed reads of it so far.
        pub failures: i32,
    }
}

/// What a team's own read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamRead {
    Found(Team),
    /// GitHub no longer has it: it is flagged deleted.
    Gone,
    /// Its name cannot be stored (a NUL): the directory keeps what it had.
    Skipped,
}

impl Claimed for TeamToRead {
    const CLAIM: &'static str =
        "update directory_changes c set claimed_until = now() + make_interval(secs => $2)
         from (select c.org_id, c.kind, c.subject_id from directory_changes c
               where c.applied and c.needs_read and not c.gone
                 and (c.claimed_until is null or c.claimed_until < now())
               order by c.requested_at limit $1 for update skip locked) due,
              directory_orgs o
         where (c.org_id, c.kind, c.subject_id) = (due.org_id, due.kind, due.subject_id)
           and o.org_id = c.org_id
         returning c.org_id, c.subject_id as team_id, c.node_id, c.failures, o.installation_id";
}

impl DirectoryDb {
    /// Writes what a read started at `started` found of a team, and ends
    /// its row unless a webhook came about it during the read.
    pub async fn finish_team_read(
        &self,
        read: &TeamToRead,
        found: &TeamRead,
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        match found {
            TeamRead::Found(team) => {
                let rows = Rows::Teams(std::slice::from_ref(team));
                super::pages::put_in(&mut tx, read.org_id, rows, started).await?
            }
            TeamRead::Skipped => {}
            TeamRead::Gone => {
                sqlx::query(
                    "update directory_teams set deleted_at = now()
                     where org_id = $1 and team_id = $2 and deleted_at is null",
                )
                .bind(read.org_id)
                .bind(read.team_id)
                .execute(&mut *tx)
                .await?;
            }
        }
        sqlx::query(
            "delete from directory_changes
             where org_id = $1 and kind = 'team' and subject_id = $2 and requested_at <= $3",
        )
        .bind(read.org_id)
        .bind(read.team_id)
        .bind(started)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "update directory_changes set claimed_until = null
             where org_id = $1 and kind = 'team' and subject_id = $2",
        )
        .bind(read.org_id)
        .bind(read.team_id)
        .execute(&mut *tx)
        .await?;
        changed_in(&mut tx, &[read.org_id]).await?;
        tx.commit().await
    }

    /// Puts a team's read off for `wait`; a failed read (`failed`) counts
    /// towards its backoff.
    pub async fn put_off_team_read(
        &self,
        read: &TeamToRead,
        wait: Duration,
        failed: bool,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "update directory_changes set claimed_until = now() + make_interval(secs => $3),
                 failures = failures + case when $4 then 1 else 0 end
             where org_id = $1 and kind = 'team' and subject_id = $2",
        )
        .bind(read.org_id)
        .bind(read.team_id)
        .bind(wait.as_secs_f64())
        .bind(failed)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A team with no node id to read it by: its organisation's teams are
    /// read whole instead (a repair, within the budget's share).
    pub async fn repair_team_read(&self, read: &TeamToRead) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "update directory_orgs set teams_requested_at = coalesce(teams_requested_at, clock_timestamp())
             where org_id = $1",
        )
        .bind(read.org_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "delete from directory_changes where org_id = $1 and kind = 'team' and subject_id = $2",
        )
        .bind(read.org_id)
        .bind(read.team_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }
}
