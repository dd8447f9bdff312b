//! Whole re-reads asked for (`directory_orgs.*_requested_at`): a repair
//! (members whose deliveries coalesced), a listing's read put off while
//! the budget is kept for the sync, or one that failed; claimed by one
//! replica's directory loop for a lease, released when read, with the
//! failures counted for the backoff.

use std::time::Duration;

use super::{Account, Claimed, DirectoryDb};

crate::row! {
    /// A re-read a webhook asked for, claimed by one replica.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Requested {
        pub account: Account as flatten,
        pub teams: bool,
        pub members: bool,
    }
}

impl Claimed for Requested {
    const CLAIM: &'static str =
        "update directory_orgs o set claimed_until = now() + make_interval(secs => $2)
         from (select org_id from directory_orgs
               where (teams_requested_at is not null or members_requested_at is not null)
                 and (claimed_until is null or claimed_until < now())
               order by least(teams_requested_at, members_requested_at)
               limit $1 for update skip locked) due
         where o.org_id = due.org_id
         returning o.org_id, o.login, o.installation_id, o.personal,
                   o.teams_requested_at is not null as teams,
                   o.members_requested_at is not null as members";
}

impl DirectoryDb {
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

    /// Counts a whole read's outcome: consecutive failures so far (0 once
    /// one worked), for the backoff of the next.
    pub async fn count_read(&self, org: i64, ok: bool) -> Result<u32, sqlx::Error> {
        let failures: Option<i32> = sqlx::query_scalar(
            "update directory_orgs set read_failures =
                 case when $2 then 0 else read_failures + 1 end
             where org_id = $1 returning read_failures",
        )
        .bind(org)
        .bind(ok)
        .fetch_optional(&self.pool)
        .await?;
        Ok(failures.map_or(0, |f| u32::try_from(f).unwrap_or(0)))
    }

    /// Holds `org` for the listing's read of it, for `lease`; false while
    /// another replica reads it, or a failed read's backoff runs.
    pub async fn claim_account(&self, org: i64, lease: Duration) -> Result<bool, sqlx::Error> {
        let claimed = sqlx::query(
            "update directory_orgs set claimed_until = now() + make_interval(secs => $2)
             where org_id = $1 and (claimed_until is null or claimed_until < now())",
        )
        .bind(org)
        .bind(lease.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(claimed.rows_affected() > 0)
    }

    /// Asks for a whole read of `org` no sooner than `after` (the budget
    /// is kept for the sync until then, or a failed read backs off).
    pub async fn request_after(
        &self,
        org: i64,
        teams: bool,
        members: bool,
        after: Duration,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "update directory_orgs set
                 teams_requested_at = case when $2 then coalesce(teams_requested_at, clock_timestamp())
                                      else teams_requested_at end,
                 members_requested_at = case when $3 then coalesce(members_requested_at, clock_timestamp())
                                        else members_requested_at end,
                 claimed_until = now() + make_interval(secs => $4)
             where org_id = $1",
        )
        .bind(org)
        .bind(teams)
        .bind(members)
        .bind(after.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
