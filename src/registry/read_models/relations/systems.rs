//! The systems of the registry (docs/contract.md#relations): each name
//! some entry gives as its `system`, with its projects and their owners,
//! a page at a time in name order.

use std::collections::HashMap;

use sqlx::PgPool;

use crate::project::ResolvedOwner;
use crate::registry::read_models::cursor;
use crate::registry::{Page, RegistryError};

/// The most project names one system lists; the rest are counted.
pub const MAX_SYSTEM_PROJECTS: usize = 1000;

/// One system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct System {
    pub name: String,
    /// The first [`MAX_SYSTEM_PROJECTS`] of its projects, by name.
    pub projects: Vec<String>,
    /// How many projects it has.
    pub project_count: usize,
    /// Its projects' owners, each with how many of its projects it owns,
    /// the most first (ties by owner).
    pub owners: Vec<SystemOwner>,
}

crate::row! {
    /// An owner of some of a system's projects, as resolved.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SystemOwner {
        pub owner: String,
        pub resolved: ResolvedOwner as flatten,
        pub projects: i64,
    }
}

crate::row! {
    struct SystemRow {
        system: String,
        projects: Vec<String>,
        project_count: i64,
    }
}

crate::row! {
    struct OwnerRow {
        system: String,
        owner: SystemOwner as flatten,
    }
}

/// At most `limit` systems after `cursor` (a [`system_cursor`]).
pub async fn systems(
    pool: &PgPool,
    limit: u32,
    after: Option<&str>,
) -> Result<Page<System>, RegistryError> {
    let after: Option<(String,)> = after.map(cursor::decode).transpose()?;
    let size = i64::from(limit.max(1));
    let mut rows: Vec<SystemRow> = sqlx::query_as(
        "select system, (array_agg(name order by name))[1:$3] as projects,
                count(*) as project_count
         from entries
         where system is not null and ($1::text is null or system > $1)
         group by system order by system limit $2",
    )
    .bind(after.map(|(name,)| name))
    .bind(size + 1)
    .bind(i32::try_from(MAX_SYSTEM_PROJECTS).unwrap_or(i32::MAX))
    .fetch_all(pool)
    .await?;
    let more = rows.len() > usize::try_from(size).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(size).unwrap_or(usize::MAX));
    let names: Vec<String> = rows.iter().map(|r| r.system.clone()).collect();
    let owners: Vec<OwnerRow> = sqlx::query_as(
        "select system, owner, owner_status, owner_team_id, owner_slug, count(*) as projects
         from entries where system = any($1)
         group by system, owner, owner_status, owner_team_id, owner_slug
         order by system, count(*) desc, owner",
    )
    .bind(&names)
    .fetch_all(pool)
    .await?;
    let mut by_system: HashMap<String, Vec<SystemOwner>> = HashMap::new();
    for row in owners {
        by_system.entry(row.system).or_default().push(row.owner);
    }
    let items: Vec<System> = rows
        .into_iter()
        .map(|row| System {
            owners: by_system.remove(&row.system).unwrap_or_default(),
            project_count: usize::try_from(row.project_count).unwrap_or(0),
            projects: row.projects,
            name: row.system,
        })
        .collect();
    let next_cursor = items
        .last()
        .filter(|_| more)
        .map(|system| system_cursor(&system.name));
    Ok(Page { items, next_cursor })
}

/// The cursor of the page of systems after `name`.
pub fn system_cursor(name: &str) -> String {
    cursor::encode(&(name,))
}
