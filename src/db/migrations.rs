//! The schema's migrations, embedded in the binary.
//!
//! Listed by hand rather than by `sqlx::migrate!`: that macro alone made
//! the build compile a second copy of sqlx, tokio and rustls for the
//! compiler (docs/performance.md, "A newcomer's first run"). Each file is
//! read the way sqlx reads a migration folder (version before the first
//! `_`, the rest as description, SHA-384 of the SQL as checksum), so a
//! database migrated by a build that used the macro finds the same
//! checksums. A test compares this list with the folder.

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

/// Each file of `migrations/`: its name and its SQL.
macro_rules! embed {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../migrations/", $file)))),*]
    };
}

/// Every migration, in version order. A new file in `migrations/` goes
/// here too (the test `every_file_in_the_folder_is_embedded` says so).
pub const FILES: &[(&str, &str)] = embed![
    "0001_registry.sql",
    "0002_queue.sql",
    "0003_deliveries.sql",
    "0004_listing_finished.sql",
    "0005_holds.sql",
    "0006_redelivery.sql",
    "0007_event_count.sql",
    "0009_revoked_sessions.sql",
    "0011_close_empty_holds.sql",
    "0012_batch_reads.sql",
    "0013_checks.sql",
    "0014_changes.sql",
    "0015_queue_trigger.sql",
    "0016_changes_by_repo.sql",
    "0017_change_log_bytes.sql",
    "0018_check_budget.sql",
    "0020_free_pushes.sql",
    "0021_claim_order.sql",
    "0022_setup.sql",
    "0023_local_ids_fit_json.sql",
    "0024_directory.sql",
    "0025_entry_owner.sql",
    "0026_owner_follow.sql",
    "0028_installation_grants.sql",
    "0030_entry_paths.sql",
    "0036_observed_at.sql",
    "0037_walked_trees.sql",
    "0039_file_blobs.sql",
    "0040_touched_pushes.sql",
    "0041_deliveries_bytewise.sql",
    "0042_relations.sql",
    "0043_listed_partitions.sql",
    "0044_directory_changes.sql",
    "0045_change_dependents.sql",
    "0046_setup_logged_token.sql",
    "0047_listing_awaited.sql",
    "0048_depends_on_lookups.sql",
];

/// A file name that is not `<version>_<description>.sql`.
#[derive(Debug, thiserror::Error)]
#[error("migration file name {0:?} is not <version>_<description>.sql")]
pub struct BadName(pub &'static str);

/// The migrations of [`FILES`], as sqlx's runner takes them.
#[derive(Debug, Clone, Copy)]
pub struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move {
            let mut migrations = FILES
                .iter()
                .map(|&(name, sql)| migration(name, sql))
                .collect::<Result<Vec<_>, _>>()?;
            migrations.sort_by_key(|m| m.version);
            Ok(migrations)
        })
    }
}

/// The runner for the embedded migrations.
pub async fn migrator() -> Result<Migrator, sqlx::migrate::MigrateError> {
    Migrator::new(Embedded).await
}

/// One migration, read from its file name and SQL as sqlx's folder reader
/// does (`sqlx_core::migrate::resolve_blocking`): the checksum
/// [`Migration::new`] computes is the one a database keeps.
fn migration(name: &'static str, sql: &'static str) -> Result<Migration, BadName> {
    let (version, rest) = name.split_once('_').ok_or(BadName(name))?;
    let version: i64 = version.parse().map_err(|_| BadName(name))?;
    if !rest.ends_with(".sql") {
        return Err(BadName(name));
    }
    let migration_type = MigrationType::from_filename(rest);
    let description = rest
        .trim_end_matches(migration_type.suffix())
        .replace('_', " ");
    let no_tx = sql.starts_with("-- no-transaction");
    Ok(Migration::new(
        version,
        Cow::Owned(description),
        migration_type,
        Cow::Borrowed(sql),
        no_tx,
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn folder() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations"))
    }

    /// sqlx's own reading of the folder: what `migrate!` embedded.
    async fn from_folder() -> Migrator {
        Migrator::new(folder()).await.expect("read migrations/")
    }

    #[test]
    fn every_file_in_the_folder_is_embedded() {
        let mut on_disk: Vec<String> = std::fs::read_dir(folder())
            .expect("read migrations/")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = FILES.iter().map(|&(name, _)| name).collect();
        assert_eq!(
            embedded, on_disk,
            "add the new file to db::migrations::FILES"
        );
    }

    #[tokio::test]
    async fn each_migration_matches_what_sqlx_reads_from_the_folder() {
        let embedded = migrator().await.expect("embedded migrations");
        let folder = from_folder().await;
        let view = |m: &Migrator| {
            m.iter()
                .map(|m| {
                    (
                        m.version,
                        m.description.to_string(),
                        m.migration_type,
                        m.checksum.to_vec(),
                        m.no_tx,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert!(!view(&embedded).is_empty());
        assert_eq!(view(&embedded), view(&folder));
    }

    /// A database migrated by a build that used `sqlx::migrate!` opens
    /// with the embedded list: no checksum mismatch, nothing re-applied.
    #[tokio::test]
    async fn a_database_migrated_by_the_folder_reader_opens_without_a_mismatch() {
        let url = crate::db::testing::empty_database()
            .await
            .expect("empty database");
        let pool = sqlx::PgPool::connect(&url).await.expect("connect");
        from_folder()
            .await
            .run(&pool)
            .await
            .expect("folder migrations");
        let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .expect("count");
        pool.close().await;

        let pool = crate::db::connect_and_migrate(&url)
            .await
            .expect("embedded migrations on a database the folder reader migrated");
        let after: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
            .fetch_one(&pool)
            .await
            .expect("count");
        assert_eq!(after, applied);
        assert_eq!(after, FILES.len() as i64);
    }

    #[test]
    fn a_name_without_a_version_is_refused() {
        assert!(migration("registry.sql", "").is_err());
        assert!(migration("x_registry.sql", "").is_err());
        assert!(migration("0001_registry.txt", "").is_err());
    }
}
