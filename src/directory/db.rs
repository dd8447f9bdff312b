//! The directory's tables (`directory_orgs`, `directory_changes`, `directory_org_logins`,
//! `directory_teams`, `directory_team_slugs`, `directory_members`), every
//! statement on them in this file's modules: the accounts (`accounts.rs`),
//! a read's pages (`pages.rs`), what webhooks said about one team or
//! member (`changes.rs`, on `directory_changes`) and the teams then read
//! alone (`team_reads.rs`), the whole re-reads asked
//! for (`requests.rs`), a directory loaded whole (`load.rs`) and the local
//! folder's (`local.rs`).

use sqlx::PgPool;

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
}
