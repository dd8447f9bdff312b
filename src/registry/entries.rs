//! Makes one repository's entries match its project file, without ever
//! taking a name another repository owns.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use sqlx::PgConnection;

use crate::project::Project;
use crate::source::RepoId;

/// An entry's values as the file declares them.
#[derive(Debug, Clone)]
pub(crate) struct Desired {
    pub name: String,
    /// The project file that declares it.
    pub path: String,
    pub owner: String,
    pub description: Option<String>,
    pub lifecycle: Option<String>,
    pub tags: Vec<String>,
    pub links: Value,
    pub labels: Value,
}

impl Desired {
    /// The entry `project` of the file at `path` asks for.
    pub fn from_project(project: &Project, path: &str) -> Self {
        Desired {
            name: project.name.as_str().to_string(),
            path: path.to_owned(),
            owner: project.owner.clone(),
            description: project.description.clone(),
            lifecycle: project.lifecycle.as_ref().map(|l| l.as_str().to_string()),
            tags: project.tags.clone(),
            links: Value::Array(
                project
                    .links
                    .iter()
                    .map(|link| json!({ "title": link.title, "url": link.url }))
                    .collect(),
            ),
            labels: json!(project.labels),
        }
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
    changes.deleted = sqlx::query_scalar(
        "delete from entries where repo_id = $1 and not (name = any($2::text[])) returning name",
    )
    .bind(repo)
    .bind(&wanted)
    .fetch_all(&mut *conn)
    .await?;
    changes.deleted.sort();

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
    let done = sqlx::query(
        "update entries set
             owner = $3, description = $4, lifecycle = $5, tags = $6, links = $7, labels = $8,
             source_sha = $9, path = $10, updated_at = now()
         where name = $1 and repo_id = $2
           and (owner, description, lifecycle, tags, links, labels, path)
               is distinct from ($3, $4, $5, $6::text[], $7::jsonb, $8::jsonb, $10)",
    )
    .bind(&entry.name)
    .bind(repo)
    .bind(&entry.owner)
    .bind(&entry.description)
    .bind(&entry.lifecycle)
    .bind(&entry.tags)
    .bind(&entry.links)
    .bind(&entry.labels)
    .bind(sha)
    .bind(&entry.path)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
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
    for _ in 0..TRIES {
        let inserted = sqlx::query(
            "insert into entries
                 (name, repo_id, owner, description, lifecycle, tags, links, labels, source_sha,
                  path)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             on conflict (name) do nothing",
        )
        .bind(&entry.name)
        .bind(repo)
        .bind(&entry.owner)
        .bind(&entry.description)
        .bind(&entry.lifecycle)
        .bind(&entry.tags)
        .bind(&entry.links)
        .bind(&entry.labels)
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
