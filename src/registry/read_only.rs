//! A read-only view of the registry, for previews that must never change it.
//!
//! [`RegistryReader`] holds a transaction opened `READ ONLY` (and
//! `REPEATABLE READ`, so every read sees one snapshot) and offers only
//! reads: code that evaluates a pull request through it cannot write the
//! registry, a repository's status or its events, and PostgreSQL refuses
//! any write that slipped in anyway.

use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::RegistryError;
use crate::project::preview::{OwnedElsewhere, RegisteredEntry, Snapshot};
use crate::source::RepoId;

/// A read-only transaction on the registry; see the module doc.
pub struct RegistryReader {
    tx: Transaction<'static, Postgres>,
}

impl RegistryReader {
    /// Opens the read-only transaction.
    pub async fn begin(pool: &PgPool) -> Result<Self, RegistryError> {
        let mut tx = pool.begin().await?;
        sqlx::query("set transaction isolation level repeatable read, read only")
            .execute(&mut *tx)
            .await?;
        Ok(Self { tx })
    }

    /// The repository's entries and the owners of `names` it does not own.
    pub async fn snapshot(
        &mut self,
        repo: RepoId,
        names: &[String],
    ) -> Result<Snapshot, RegistryError> {
        snapshot(&mut self.tx, repo, names).await
    }

    /// Ends the transaction (it wrote nothing, so nothing is lost).
    pub async fn finish(self) -> Result<(), RegistryError> {
        self.tx.rollback().await?;
        Ok(())
    }
}

/// [`RegistryReader::snapshot`] on any connection: the reconcile's own
/// transaction uses it to preview what it is about to apply.
pub(crate) async fn snapshot(
    conn: &mut PgConnection,
    repo: RepoId,
    names: &[String],
) -> Result<Snapshot, RegistryError> {
    type EntryRow = (
        String,
        String,
        Option<String>,
        Option<String>,
        Vec<String>,
        serde_json::Value,
        serde_json::Value,
    );
    let rows: Vec<EntryRow> = sqlx::query_as(
        "select name, owner, description, lifecycle, tags, links, labels
         from entries where repo_id = $1 order by name",
    )
    .bind(repo)
    .fetch_all(&mut *conn)
    .await?;
    let entries = rows
        .into_iter()
        .map(
            |(name, owner, description, lifecycle, tags, links, labels)| RegisteredEntry {
                name,
                owner,
                description,
                lifecycle,
                tags,
                links,
                labels,
            },
        )
        .collect();
    let taken: Vec<(String, String)> = if names.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as(
            "select e.name, r.owner || '/' || r.name as owner_repo
             from entries e join repositories r on r.id = e.repo_id
             where e.name = any($1::text[]) and e.repo_id <> $2
             order by e.name",
        )
        .bind(names)
        .bind(repo)
        .fetch_all(&mut *conn)
        .await?
    };
    let taken = taken
        .into_iter()
        .map(|(name, owner_repo)| OwnedElsewhere { name, owner_repo })
        .collect();
    Ok(Snapshot { entries, taken })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_slipped_into_the_reader_should_be_refused_by_postgres() {
        let Ok((pool, _)) = crate::db::testing::fresh_database().await else {
            panic!("a test database is needed (DATABASE_URL)");
        };
        let mut reader = RegistryReader::begin(&pool).await.expect("begin");
        let written = sqlx::query(
            "insert into repositories (id, owner, name, default_branch) values (1, 'a', 'b', 'main')",
        )
        .execute(&mut *reader.tx)
        .await;
        let message = written
            .expect_err("a read-only transaction refuses writes")
            .to_string();
        assert!(message.contains("read-only transaction"), "{message}");
    }
}
