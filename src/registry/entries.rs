//! Makes one repository's entries match its project file, without ever
//! taking a name another repository owns.

use std::collections::BTreeSet;

use serde_json::Value;
use sqlx::PgConnection;

use crate::project::fields::stored_columns;
use crate::project::{Fields, Project, ResolvedOwner};
use crate::source::RepoId;

/// An entry's values as the file declares them, and its owner as resolved.
#[derive(Debug, Clone)]
pub(crate) struct Desired {
    pub name: String,
    /// The project file that declares it.
    pub path: String,
    pub fields: Fields,
    pub owner: ResolvedOwner,
}

impl Desired {
    /// The entry `project` of the file at `path` asks for, its owner
    /// resolved as `owner`.
    pub fn from_project(project: &Project, path: &str, owner: ResolvedOwner) -> Self {
        Desired {
            name: project.name.as_str().to_string(),
            path: path.to_owned(),
            fields: project.fields.clone(),
            owner,
        }
    }

    /// Every stored field by its column's name: what `jsonb_populate_record`
    /// turns into a row of `entries`.
    fn stored(&self) -> Value {
        let mut row = serde_json::to_value(&self.fields).unwrap_or(Value::Null);
        if let (Some(row), Ok(Value::Object(owner))) =
            (row.as_object_mut(), serde_json::to_value(&self.owner))
        {
            row.extend(owner);
        }
        row
    }
}

/// A name the repository wants and another repository owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub name: String,
    /// `owner/name` of the owning repository.
    pub owner_repo: String,
}

/// What applying a file changed.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub deleted: Vec<String>,
    pub conflicts: Vec<Conflict>,
}

impl Changes {
    /// `created a, b`, `updated c`, `deleted d`: the non-empty ones, for a
    /// repository's message.
    pub fn summary(&self) -> Vec<String> {
        [
            ("created", &self.created),
            ("updated", &self.updated),
            ("deleted", &self.deleted),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(verb, names)| format!("{verb} {}", names.join(", ")))
        .collect()
    }

    /// Whether an entry was created, updated or deleted.
    pub fn entries_changed(&self) -> bool {
        !(self.created.is_empty() && self.updated.is_empty() && self.deleted.is_empty())
    }
}

/// Deletes every entry of the repository, returning the released names.
pub(crate) async fn delete_all(
    conn: &mut PgConnection,
    repo: RepoId,
) -> Result<Vec<String>, sqlx::Error> {
    let mut names: Vec<String> =
        sqlx::query_scalar("delete from entries where repo_id = $1 returning name")
            .bind(repo)
            .fetch_all(conn)
            .await?;
    names.sort();
    Ok(names)
}

/// Applies the files' projects: stale entries are deleted first (so names
/// are released before new ones are taken), then each name, in order, is
/// updated if it changed (its path too: a moved entry is updated, never
/// removed and created again) or inserted if free, and recorded as a
/// conflict when another repository owns it. Entries named in `keep` (those
/// of an invalid file, kept as they were) are left alone.
///
/// Must run inside the transaction that locked the repository row.
/// `owned` is the names the repository owned before, when the caller read
/// them already in this transaction (saves reading them again).
pub(crate) async fn apply(
    conn: &mut PgConnection,
    repo: RepoId,
    sha: &str,
    desired: &[Desired],
    keep: &[String],
    owned: Option<BTreeSet<String>>,
) -> Result<Changes, sqlx::Error> {
    let mut changes = Changes::default();
    let wanted: Vec<&str> = desired
        .iter()
        .map(|d| d.name.as_str())
        .chain(keep.iter().map(String::as_str))
        .collect();
    // Under the repository's lock its entries are the `owned` read: when
    // each is still wanted, there is nothing to delete.
    let stale = match &owned {
        Some(owned) => owned.iter().any(|name| !wanted.contains(&name.as_str())),
        None => true,
    };
    if stale {
        changes.deleted = sqlx::query_scalar(
            "delete from entries where repo_id = $1 and not (name = any($2::text[])) returning name",
        )
        .bind(repo)
        .bind(&wanted)
        .fetch_all(&mut *conn)
        .await?;
        changes.deleted.sort();
    }

    let owned: BTreeSet<String> = match owned {
        Some(mut owned) => {
            for name in &changes.deleted {
                owned.remove(name);
            }
            owned
        }
        None => sqlx::query_scalar("select name from entries where repo_id = $1")
            .bind(repo)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect(),
    };

    let mut sorted: Vec<&Desired> = desired.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for entry in sorted {
        if owned.contains(&entry.name) {
            if update(conn, repo, sha, entry).await? {
                changes.updated.push(entry.name.clone());
            }
        } else {
            match claim(conn, repo, sha, entry).await? {
                None => changes.created.push(entry.name.clone()),
                Some(owner_repo) => changes.conflicts.push(Conflict {
                    name: entry.name.clone(),
                    owner_repo,
                }),
            }
        }
    }
    Ok(changes)
}

/// Updates an entry this repository owns, only when a value differs, so
/// that `updated_at` and `source_sha` move only on a real change.
async fn update(
    conn: &mut PgConnection,
    repo: RepoId,
    sha: &str,
    entry: &Desired,
) -> Result<bool, sqlx::Error> {
    let (columns, old, new) = (stored_columns(), prefixed("e"), prefixed("v"));
    let done = sqlx::query(&format!(
        "update entries e set ({columns}) = ({new}), path = $5, source_sha = $4,
             updated_at = now()
         from jsonb_populate_record(null::entries, $3) v
         where e.name = $1 and e.repo_id = $2
           and ({old}, e.path) is distinct from ({new}, $5)"
    ))
    .bind(&entry.name)
    .bind(repo)
    .bind(entry.stored())
    .bind(sha)
    .bind(&entry.path)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The stored columns of the row called `alias` (`e.owner, e.description, …`).
fn prefixed(alias: &str) -> String {
    stored_columns()
        .split(", ")
        .map(|column| format!("{alias}.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Takes a name for this repository if it is free; otherwise returns the
/// full name of the repository that owns it.
///
/// The primary key decides between two repositories racing for one name.
/// The loser locks the winner's entry (`for key share`) until it commits,
/// so the winner cannot release the name in between and miss waking the
/// loser up (it finds the loser's recorded conflict after its own commit).
async fn claim(
    conn: &mut PgConnection,
    repo: RepoId,
    sha: &str,
    entry: &Desired,
) -> Result<Option<String>, sqlx::Error> {
    // The owner can release the name between our insert and our look-up;
    // then the name is free and the insert is tried again.
    const TRIES: usize = 3;
    let columns = stored_columns();
    for _ in 0..TRIES {
        let inserted = sqlx::query(&format!(
            "insert into entries (name, repo_id, source_sha, path, {columns})
             select $1, $2, $4, $5, {columns} from jsonb_populate_record(null::entries, $3)
             on conflict (name) do nothing"
        ))
        .bind(&entry.name)
        .bind(repo)
        .bind(entry.stored())
        .bind(sha)
        .bind(&entry.path)
        .execute(&mut *conn)
        .await?;
        if inserted.rows_affected() > 0 {
            return Ok(None);
        }
        let owner: Option<String> = sqlx::query_scalar(
            "select r.owner || '/' || r.name
             from entries e join repositories r on r.id = e.repo_id
             where e.name = $1
             for key share of e",
        )
        .bind(&entry.name)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(owner) = owner {
            return Ok(Some(owner));
        }
    }
    Ok(Some("another repository".to_string()))
}

/// The path of each entry of the repository, by name.
pub(crate) async fn paths(
    conn: &mut PgConnection,
    repo: RepoId,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("select name, path from entries where repo_id = $1 order by name")
        .bind(repo)
        .fetch_all(conn)
        .await
}
