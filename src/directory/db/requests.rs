//! Re-reads a webhook asked for (`directory_orgs.*_requested_at`): asked in
//! the webhook's transaction, claimed by one replica's directory loop for a
//! lease, released when read.

use std::time::Duration;

use sqlx::{PgConnection, Row};

use super::{Account, DirectoryDb};

/// A re-read a webhook asked for, claimed by one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    pub account: Account,
    pub teams: bool,
    pub members: bool,
}

impl DirectoryDb {
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
