//! The registry read whole, a page at a time, for exports to other
//! catalogs (`GET /api/v1/backstage/entities.yaml`), and the one cheap read
//! that says whether anything an export shows has changed since.
//!
//! Pages are keyed by name and read one statement each, so an export of any
//! size holds one page in memory and no connection between pages. A reader
//! takes the [`ExportVersion`] *before* its first page: should the registry
//! change while it reads, the version it handed out is already stale and
//! the next poll reads afresh.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::entry_query::{EntryRow, ENTRY_SELECT};
use crate::registry::entry::Entry;
use crate::registry::RegistryError;

/// Entries a page of an export holds.
pub const EXPORT_PAGE: i64 = 500;

/// An entry with what an export says of its repository.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportEntry {
    pub entry: Entry,
    /// The repository's default branch, where its file is read.
    pub default_branch: Option<String>,
    /// The repository's page on GitHub; `None` for a local folder.
    pub html_url: Option<String>,
}

crate::row! {
    struct ExportRow {
        entry: EntryRow as flatten,
        default_branch: Option<String>,
        html_url: Option<String>,
    }
}

/// The entries after `after` (all from the first when `None`), by name, at
/// most [`EXPORT_PAGE`].
pub async fn export_page(
    pool: &PgPool,
    after: Option<&str>,
) -> Result<Vec<ExportEntry>, RegistryError> {
    // A GitHub repository whose page was never recorded still has one.
    let rows: Vec<ExportRow> = sqlx::query_as(&format!(
        "select x.*, r.default_branch,
                case when r.installation_id is null then r.html_url
                     else coalesce(r.html_url, 'https://github.com/' || r.owner || '/' || r.name)
                end as html_url
         from ({ENTRY_SELECT} where $1::text is null or e.name > $1 order by e.name limit $2) x
         join repositories r on r.id = x.repo_id
         order by x.name"
    ))
    .bind(after)
    .bind(EXPORT_PAGE)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| ExportEntry {
            entry: Entry::from(row.entry),
            default_branch: row.default_branch,
            html_url: row.html_url,
        })
        .collect())
}

/// What an export shows moves only when one of these does: the change
/// log's head (every entry created, changed or removed, an owner followed
/// through a rename included) and the last change to a repository's own
/// row (a rename, a new default branch). Read without touching `entries`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportVersion {
    pub head: i64,
    pub repos_changed_at: Option<DateTime<Utc>>,
}

impl ExportVersion {
    /// The version as a short token, for an `ETag`.
    pub fn token(&self) -> String {
        let micros = self.repos_changed_at.map_or(0, |at| at.timestamp_micros());
        format!("{}-{micros:x}", self.head)
    }
}

/// The version of what an export would show now: the change log's head
/// and the repositories' last change, two single-row reads.
pub async fn export_version(pool: &PgPool) -> Result<ExportVersion, RegistryError> {
    let head = crate::registry::changes::head(pool).await?;
    let repos_changed_at = sqlx::query_scalar("select max(updated_at) from repositories")
        .fetch_one(pool)
        .await?;
    Ok(ExportVersion {
        head,
        repos_changed_at,
    })
}
