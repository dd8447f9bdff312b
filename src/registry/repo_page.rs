//! What the dashboard's repository page shows beyond the API's JSON.

use sqlx::PgPool;

use super::RegistryError;
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
}

/// Reads [`RepoSourceInfo`] of one repository (empty when it is unknown).
pub async fn repo_source_info(pool: &PgPool, id: RepoId) -> Result<RepoSourceInfo, RegistryError> {
    let Some((default_branch, conflicts)): Option<(Option<String>, Vec<String>)> =
        sqlx::query_as("select default_branch, conflicts from repositories where id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?
    else {
        return Ok(RepoSourceInfo::default());
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
