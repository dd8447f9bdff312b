//! Fresh, isolated databases for integration tests and benchmarks.
//!
//! Each call creates a new database with a random name on the server of
//! `DATABASE_URL` (default [`DEFAULT_URL`]), so tests running in parallel
//! never see each other's rows. They are named `roster_test_*`, and
//! `roster_test_RUN_*` when `ROSTER_TEST_RUN` names the run (as
//! `scripts/test` does, dropping that run's databases when it ends).

use sqlx::{Connection, PgConnection, PgPool};
use url::Url;

use super::{connect_and_migrate, DbError};

/// The server tests use when `DATABASE_URL` is unset.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Creates an empty database, applies the migrations, and returns a pool on
/// it and its URL (to open more connections, as another replica would).
pub async fn fresh_database() -> Result<(PgPool, String), DbError> {
    let url = empty_database().await?;
    let pool = connect_and_migrate(&url).await?;
    Ok((pool, url))
}

/// Creates a database with nothing in it, not even the migrations, and
/// returns its URL.
pub async fn empty_database() -> Result<String, DbError> {
    let server = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let mut url = Url::parse(&server)?;
    let name = match run_tag() {
        Some(run) => format!("roster_test_{run}_{:016x}", fastrand::u64(..)),
        None => format!("roster_test_{:016x}", fastrand::u64(..)),
    };

    let mut admin = PgConnection::connect(&server)
        .await
        .map_err(DbError::Connect)?;
    // `name` is hex digits after a fixed prefix: nothing to quote.
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .map_err(DbError::Connect)?;
    // Closing politely only saves the server a log line.
    let _ = admin.close().await;

    url.set_path(&format!("/{name}"));
    Ok(url.to_string())
}

/// The run named by `ROSTER_TEST_RUN`, kept to lowercase letters and digits
/// (at most 16) so it can go into a database name unquoted.
fn run_tag() -> Option<String> {
    let run: String = std::env::var("ROSTER_TEST_RUN")
        .ok()?
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(16)
        .collect();
    (!run.is_empty()).then_some(run)
}
