//! Seeding for tests and benchmarks (feature `testing`): the few states a
//! reconcile reaches only over time (a sync minutes ago, a timeline of
//! days) or never through a project file (entries its rules refuse), kept
//! here so that the registry's tables are written only by the registry.
//! Everything else is seeded through [`super::RegistryHandler`]. And one
//! entry built in memory ([`entry`]), so that the unit tests of changes,
//! answers and JSON do not each spell out an entry's every field.

use std::time::Duration;

use sqlx::PgPool;

use super::entries::{self, Desired};
use super::{repos, Entry, RegistryError};
use crate::project::{Fields, Project, ResolvedOwner};
use crate::source::RepoId;

/// An entry as the registry holds one, for tests that build changes,
/// answers or JSON without a database: `name` in `acme/app` (id 7), owned
/// by `owner`, written at the epoch.
pub fn entry(name: &str, owner: &str) -> Entry {
    let at = chrono::DateTime::from_timestamp(0, 0).unwrap_or_default();
    Entry {
        name: name.into(),
        fields: Fields {
            owner: owner.into(),
            ..Fields::default()
        },
        resolved: ResolvedOwner::default(),
        repo: "acme/app".into(),
        repo_id: RepoId(7),
        path: "project.yaml".into(),
        source_sha: "abc".into(),
        created_at: at,
        updated_at: at,
    }
}

/// One event of a seeded timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastEvent<'a> {
    pub kind: &'a str,
    pub message: &'a str,
    /// The reconciles in a row it stands for (1: a single one).
    pub count: i64,
    /// How long ago the latest of them was.
    pub ago: Duration,
}

/// How many repositories are recorded, and in how many transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub rows: i64,
    /// Rows written by one transaction share its id (`xmin`): fewer
    /// commits than rows means some were written together.
    pub commits: i64,
}

/// What the intake's tests check of a group commit.
pub async fn repositories_written(pool: &PgPool) -> Result<Written, sqlx::Error> {
    let (rows, commits) =
        sqlx::query_as("select count(*), count(distinct xmin::text) from repositories")
            .fetch_one(pool)
            .await?;
    Ok(Written { rows, commits })
}

/// Moves a repository's last sync `ago` into the past, as if nothing had
/// been applied since.
pub async fn backdate_last_sync(
    pool: &PgPool,
    id: RepoId,
    ago: Duration,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update repositories set last_synced_at = now() - make_interval(secs => $2)
         where id = $1",
    )
    .bind(id)
    .bind(ago.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Dates every entry of a repository: created `created_ago`, last changed
/// `updated_ago`.
pub async fn backdate_entries(
    pool: &PgPool,
    id: RepoId,
    created_ago: Duration,
    updated_ago: Duration,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update entries set created_at = now() - make_interval(secs => $2),
                            updated_at = now() - make_interval(secs => $3)
         where repo_id = $1",
    )
    .bind(id)
    .bind(created_ago.as_secs_f64())
    .bind(updated_ago.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Replaces a repository's timeline with `events`, oldest first.
pub async fn replace_events(
    pool: &PgPool,
    id: RepoId,
    events: &[PastEvent<'_>],
) -> Result<(), RegistryError> {
    let mut tx = pool.begin().await?;
    sqlx::query("delete from events where repo_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    for event in events {
        sqlx::query(
            "insert into events (repo_id, at, kind, message, count)
             values ($1, now() - make_interval(secs => $2), $3, $4, $5)",
        )
        .bind(id)
        .bind(event.ago.as_secs_f64())
        .bind(event.kind)
        .bind(event.message)
        .bind(event.count)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Writes `projects` as a known repository's entries at commit `sha`, the
/// way a valid file declaring them is applied, but without the file's rules:
/// for data the rules refuse (a `javascript:` link) that the pages must
/// still show safely. Status and timeline stay as they were.
pub async fn write_entries_unchecked(
    pool: &PgPool,
    id: RepoId,
    sha: &str,
    projects: &[Project],
) -> Result<(), RegistryError> {
    let mut tx = pool.begin().await?;
    // As in a reconcile: entries change only under the repository's lock.
    repos::lock(&mut tx, id).await?;
    let desired: Vec<Desired> = projects
        .iter()
        .map(|p| Desired::from_project(p, "project.yaml", ResolvedOwner::default()))
        .collect();
    entries::apply(&mut tx, id, sha, &desired, &[], None).await?;
    tx.commit().await?;
    Ok(())
}

/// A repository's row, entries and events as the reconcile left them, its
/// own name written as `X` and its times and blob id (its bytes name it)
/// left out, but whether each time moved since `since`: what two ways of
/// applying the same observation to two repositories must agree on.
pub async fn as_left(
    pool: &PgPool,
    id: RepoId,
    name: &str,
    since: &str,
) -> Result<String, sqlx::Error> {
    sqlx::query_scalar(
        "select replace(concat_ws(' | ',
            (select (to_jsonb(r) - 'id' - 'file_blob' - 'created_at' - 'updated_at'
                     - 'last_synced_at' - 'observed_at')::text
                    || (r.updated_at > $3::timestamptz)::text
                    || (r.last_synced_at > $3::timestamptz)::text
                    || (r.observed_at > $3::timestamptz)::text
             from repositories r where r.id = $1),
            (select string_agg((to_jsonb(e) - 'repo_id' - 'created_at' - 'updated_at')::text
                               || (e.updated_at > $3::timestamptz)::text, ',' order by e.name)
             from entries e where e.repo_id = $1),
            (select string_agg(kind || ':' || message || ':' || count, ',' order by id)
             from events where repo_id = $1)), $2, 'X')",
    )
    .bind(id)
    .bind(name)
    .bind(since)
    .fetch_one(pool)
    .await
}

/// The database's clock now, as text `as_left` compares with.
pub async fn clock(pool: &PgPool) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("select clock_timestamp()::text")
        .fetch_one(pool)
        .await
}
