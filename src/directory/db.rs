//! The directory's tables (`directory_orgs`, `directory_org_logins`,
//! `directory_teams`, `directory_team_slugs`, `directory_members`), every
//! statement on them in this file's modules: the accounts (`accounts.rs`),
//! a read's pages (`pages.rs`), the re-reads webhooks ask for
//! (`requests.rs`), a directory loaded whole (`load.rs`) and the local
//! folder's (`local.rs`).

use sqlx::PgPool;

mod accounts;
mod load;
mod local;
mod pages;
mod requests;

pub use accounts::{rename_in, Account, AccountStatus};
pub use local::local_account;
pub use requests::{request_read_in, Requested};

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
