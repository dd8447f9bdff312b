//! A read-only view of the registry, for previews that must never change it.
//!
//! [`RegistryReader`] holds a transaction opened `READ ONLY` (and
//! `REPEATABLE READ`, so every read sees one snapshot) and offers only
//! reads: code that evaluates a pull request through it cannot write the
//! registry, a repository's status or its events, and PostgreSQL refuses
//! any write that slipped in anyway.

use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::owner_check::{add_owner_notes, OwnerCheck};
use super::relation_check::{add_relation_notes, CheckedFile, Reading};
use crate::project::preview::{OwnedElsewhere, RegisteredEntry, Snapshot};
use crate::project::relations::RelationsMode;
use crate::project::verdict::{Parsed, Verdict};
use crate::registry::RegistryError;
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

    /// [`Self::snapshot`] as a public repository's check may show it: an
    /// owner not known to be public too reads [`UNNAMED_OWNER`].
    pub async fn snapshot_for_public(
        &mut self,
        repo: RepoId,
        names: &[String],
    ) -> Result<Snapshot, RegistryError> {
        snapshot_seen_by(&mut self.tx, repo, names, Reader::Public, None).await
    }

    /// Adds the owner annotations of `parsed` to `verdict`, read in the
    /// same snapshot (see [`super::owner_check`]).
    pub async fn add_owner_notes(
        &mut self,
        check: &OwnerCheck<'_>,
        parsed: &Parsed,
        registered: &[RegisteredEntry],
        verdict: &mut Verdict,
    ) -> Result<(), RegistryError> {
        add_owner_notes(&mut self.tx, check, parsed, registered, verdict).await
    }

    /// Adds the relation annotations of `files` to `verdict`, read in the
    /// same snapshot (see [`super::relation_check`]), then ends the
    /// transaction: the relation notes are always a check's last reading.
    pub async fn finish_with_relation_notes(
        mut self,
        mode: RelationsMode,
        reading: &Reading<'_>,
        files: &[CheckedFile<'_>],
        registered: &[RegisteredEntry],
        mut verdict: Verdict,
    ) -> Result<Verdict, RegistryError> {
        let tx = &mut self.tx;
        add_relation_notes(tx, mode, reading, files, registered, &mut verdict, true).await?;
        // It wrote nothing, so nothing is lost.
        self.tx.rollback().await?;
        Ok(verdict)
    }
}

/// [`RegistryReader::snapshot`] on any connection: the reconcile's own
/// transaction uses it to preview what it is about to apply.
pub(crate) async fn snapshot(
    conn: &mut PgConnection,
    repo: RepoId,
    names: &[String],
) -> Result<Snapshot, RegistryError> {
    snapshot_seen_by(conn, repo, names, Reader::Private, None).await
}

/// [`snapshot`] for the check run posted on `repo`'s default branch after a
/// reconcile: the source does not say whether a repository is public, so
/// unless a pull request's payload said `repo` is private, its check names
/// an owner only when that owner is known to be public (docs/contract.md#bounds).
pub(crate) async fn snapshot_for_default_branch(
    conn: &mut PgConnection,
    repo: RepoId,
    names: &[String],
    entries: Option<&[RegisteredEntry]>,
) -> Result<Snapshot, RegistryError> {
    let own = entries.map(<[RegisteredEntry]>::to_vec);
    snapshot_seen_by(conn, repo, names, Reader::DefaultBranch, own).await
}

/// Whether the check posted on `repo`'s default branch is read as a
/// public repository's: unless a pull request's payload said it is
/// private.
pub(crate) async fn read_as_public(
    conn: &mut PgConnection,
    repo: RepoId,
) -> Result<bool, RegistryError> {
    let public: Option<bool> =
        sqlx::query_scalar("select public from repo_visibility where repo_id = $1")
            .bind(repo)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(public != Some(false))
}

/// How a public repository's check names an owner that may not be public.
pub const UNNAMED_OWNER: &str = "another repository of the organisation";

/// Who reads a snapshot, which decides whether it names an owner that
/// is not known to be public.
#[derive(Clone, Copy)]
enum Reader {
    Public,
    Private,
    /// The default branch's check: public unless a pull request's payload
    /// said the repository is private ([`read_as_public`]), read with the
    /// owners.
    DefaultBranch,
}

/// The repository's entries (`own` when the caller knows them) and who
/// owns the `names` it does not; at most two statements.
async fn snapshot_seen_by(
    conn: &mut PgConnection,
    repo: RepoId,
    names: &[String],
    reader: Reader,
    own: Option<Vec<RegisteredEntry>>,
) -> Result<Snapshot, RegistryError> {
    let entries: Vec<RegisteredEntry> = match own {
        Some(entries) => entries,
        None => {
            sqlx::query_as("select * from entries where repo_id = $1 order by name")
                .bind(repo)
                .fetch_all(&mut *conn)
                .await?
        }
    };
    let taken: Vec<(String, String, bool, bool)> = if names.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as(
            "select e.name, r.owner || '/' || r.name as owner_repo, coalesce(v.public, false),
                    coalesce((select public from repo_visibility where repo_id = $2), true)
             from entries e join repositories r on r.id = e.repo_id
             left join repo_visibility v on v.repo_id = e.repo_id
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
        .map(|(name, owner_repo, owner_public, reader_public)| {
            let public_reader = match reader {
                Reader::Public => true,
                Reader::Private => false,
                Reader::DefaultBranch => reader_public,
            };
            OwnedElsewhere {
                name,
                owner_repo: if public_reader && !owner_public {
                    UNNAMED_OWNER.to_owned()
                } else {
                    owner_repo
                },
            }
        })
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
