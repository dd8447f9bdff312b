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

/// A replica's PostgreSQL connections when `ROSTER_DB_MAX_CONNECTIONS` is
/// unset, every pool together (docs/operations.md, "Settings").
pub const DEFAULT_MAX_CONNECTIONS: u32 = 23;
/// The fewest allowed: the intake's own, the shared pool's three held
/// `LISTEN` connections (queue, change feed, check runs), and two to work.
pub const MIN_MAX_CONNECTIONS: u32 = INTAKE_CONNECTIONS + 5;
/// The most allowed: far beyond any PostgreSQL's `max_connections`.
pub const MAX_MAX_CONNECTIONS: u32 = 10_000;
/// The webhook intake's group writers, each on a connection of its own.
pub const INTAKE_WRITERS: usize = 2;
/// The intake's own connections, outside the shared pool: its writers and
/// the delivery log's writer.
pub const INTAKE_CONNECTIONS: u32 = INTAKE_WRITERS as u32 + 1;

/// What the shared pool may open of a replica's `max_connections`: the
/// rest is the intake's own.
pub fn shared_connections(max_connections: u32) -> u32 {
    max_connections.saturating_sub(INTAKE_CONNECTIONS).max(1)
}

/// Opens the shared pool on `url` with the default share and brings the
/// schema up to date (tests and tools; `serve` takes its setting).
pub async fn connect_and_migrate(url: &str) -> Result<PgPool, DbError> {
    connect_and_migrate_within(url, DEFAULT_MAX_CONNECTIONS).await
}

/// Opens the shared pool on `url` (its share of `max_connections`, the
/// replica's total, `ROSTER_DB_MAX_CONNECTIONS`) and brings the schema up
/// to date.
pub async fn connect_and_migrate_within(
    url: &str,
    max_connections: u32,
) -> Result<PgPool, DbError> {
    let pool = PgPoolOptions::new()
        .max_connections(shared_connections(max_connections))
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(DbError::Connect)?;
    migrations::migrator().await?.run(&pool).await?;
    Ok(pool)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_shared_pool_should_take_the_setting_less_the_intakes_own() {
        let (_pool, url) = super::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let pool = super::connect_and_migrate_within(&url, 8)
            .await
            .expect("pool");
        assert_eq!(pool.options().get_max_connections(), 5);
        pool.close().await;
        let pool = super::connect_and_migrate(&url).await.expect("pool");
        assert_eq!(
            pool.options().get_max_connections() + super::INTAKE_CONNECTIONS,
            super::DEFAULT_MAX_CONNECTIONS
        );
    }
}
