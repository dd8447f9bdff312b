//! What the dashboard's repository page shows beyond the API's JSON.

use sqlx::types::Json;
use sqlx::PgPool;

use crate::registry::file_blobs::FileBlobs;
use crate::registry::RegistryError;
use crate::source::RepoId;

/// A project name a repository declares that another repository owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictOwner {
    pub project: String,
    /// `owner/name` of the owning repository; `None` when the entry has
    /// gone since the conflict was recorded.
    pub owner_repo: Option<String>,
}

/// What the repository page shows beyond the API's JSON: the default
/// branch (for the link to the project file) and who owns the names it
/// conflicts on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepoSourceInfo {
    pub default_branch: Option<String>,
    pub conflicts: Vec<ConflictOwner>,
    /// The project files its last reconcile read, by path: those recorded
    /// for several files, else the files its entries come from. Empty when
    /// neither says (no file, or one that declared nothing).
    pub files_read: Vec<String>,
}

/// Reads [`RepoSourceInfo`] of one repository (empty when it is unknown).
pub async fn repo_source_info(pool: &PgPool, id: RepoId) -> Result<RepoSourceInfo, RegistryError> {
    type Row = (Option<String>, Vec<String>, Option<Json<FileBlobs>>);
    let Some((default_branch, conflicts, blobs)): Option<Row> = sqlx::query_as(
        "select default_branch, conflicts, file_blobs from repositories where id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?
    else {
        return Ok(RepoSourceInfo::default());
    };
    let files_read: Vec<String> = match blobs {
        Some(Json(blobs)) => blobs.into_keys().collect(),
        None => {
            sqlx::query_scalar("select distinct path from entries where repo_id = $1 order by path")
                .bind(id)
                .fetch_all(pool)
                .await?
        }
    };
    let owners: Vec<(String, Option<String>)> = sqlx::query_as(
        "select c.name, r.owner || '/' || r.name
         from unnest($1::text[]) as c(name)
         left join entries e on e.name = c.name collate \"C\"
         left join repositories r on r.id = e.repo_id
         order by c.name",
    )
    .bind(&conflicts)
    .fetch_all(pool)
    .await?;
    Ok(RepoSourceInfo {
        files_read,
        default_branch,
        conflicts: owners
            .into_iter()
            .map(|(project, owner_repo)| ConflictOwner {
                project,
                owner_repo,
            })
            .collect(),
    })
}
