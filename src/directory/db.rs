//! The directory's tables (`directory_orgs`, `directory_changes`, `directory_org_logins`,
//! `directory_teams`, `directory_team_slugs`, `directory_members`), every
//! statement on them in this file's modules: the accounts (`accounts.rs`),
//! a read's pages (`pages.rs`), what webhooks said about one team or
//! member (`changes.rs`, on `directory_changes`) and the teams then read
//! alone (`team_reads.rs`), the whole re-reads asked
//! for (`requests.rs`), a directory loaded whole (`load.rs`) and the local
//! folder's (`local.rs`).

use std::time::Duration;

use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgPool};

mod accounts;
mod changes;
mod load;
mod local;
mod pages;
mod requests;
mod team_reads;

pub use accounts::{rename_in, Account, AccountStatus};
pub use changes::record_in;
pub use local::local_account;
pub use requests::Requested;
pub use team_reads::{TeamRead, TeamToRead};

/// The directory's tables, through one pool.
#[derive(Debug, Clone)]
pub struct DirectoryDb {
    pool: PgPool,
}

impl DirectoryDb {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Claims up to `limit` pieces of work of kind `T` for `lease`, so two
    /// replicas never hold the same one and a crashed replica's comes back
    /// once its lease runs out.
    pub async fn claim<T: Claimed>(
        &self,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<T>, sqlx::Error> {
        sqlx::query_as(T::CLAIM)
            .bind(limit)
            .bind(lease.as_secs_f64())
            .fetch_all(&self.pool)
            .await
    }
}

/// Work the directory's loops claim for a lease: a whole re-read asked
/// for ([`Requested`]) or a team to read alone ([`TeamToRead`]).
pub trait Claimed: for<'r> FromRow<'r, PgRow> + Send + Unpin {
    /// The statement that claims it: it takes the most rows to claim
    /// (`$1`) and the lease in seconds (`$2`), and returns what it claimed.
    const CLAIM: &'static str;
}
