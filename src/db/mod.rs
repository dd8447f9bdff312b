//! PostgreSQL: connecting, the migrations, and the stores built on them.

pub mod embedded;
pub mod fence;
pub mod migrations;
pub mod one_statement;
pub mod queue;
pub mod rows;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

/// One page of a list read in key order, and where the next one starts:
/// what the registry's and the delivery log's list reads return, before
/// `web` shows it (as `{"items": …, "next_cursor": …}`).
/// The cursor is `None` on the last page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Why the database could not be reached or prepared.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("invalid database URL: {0}")]
    Url(#[from] url::ParseError),
    #[error("cannot connect: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Opens a pool on `url` and brings the schema up to date.
pub async fn connect_and_migrate(url: &str) -> Result<PgPool, DbError> {
    let pool = PgPoolOptions::new()
        .max_connections(20)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(DbError::Connect)?;
    migrations::migrator().await?.run(&pool).await?;
    Ok(pool)
}
