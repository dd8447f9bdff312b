//! The read side of relations (docs/contract.md#relations): who depends on
//! a project, which of its dependencies name a project that exists, the
//! neighbourhood of a project as a graph, and the systems. Dependencies are
//! stored by name and resolved here, when read, so a dependency declared
//! before its target resolves as soon as the target is applied.

mod graph;
mod systems;

use std::collections::{HashMap, HashSet};

use sqlx::PgPool;

use crate::registry::RegistryError;

pub use graph::{
    neighbourhood, whole_registry, Graph, Node, NodeEntry, DEPENDENTS_SQL, GRAPH_STATEMENT_TIMEOUT,
    MAX_DEPTH, MAX_GRAPH_NODES,
};
pub use systems::{system_cursor, systems, System, SystemOwner, MAX_SYSTEM_PROJECTS};

/// The most dependents an entry's answer names; the rest are counted.
pub const MAX_DEPENDENTS: usize = 1000;

crate::row! {
    /// An entry that depends on another: where to find it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Dependent {
        pub name: String,
        /// `owner/name` of its repository.
        pub repo: String,
        /// The project file that declares it.
        pub path: String,
    }
}

/// The entries that depend on a project: the first [`MAX_DEPENDENTS`] by
/// name, and how many there are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependents {
    pub items: Vec<Dependent>,
    pub total: usize,
}

crate::row! {
    struct DependentRow {
        dependent: Dependent as flatten,
        total: i64,
    }
}

/// Who depends on `name` now (the index on `depends_on` answers it).
pub async fn dependents_of(pool: &PgPool, name: &str) -> Result<Dependents, RegistryError> {
    let rows: Vec<DependentRow> = sqlx::query_as(
        "select e.name, r.owner || '/' || r.name as repo, e.path, count(*) over () as total
         from entries e join repositories r on r.id = e.repo_id
         where e.depends_on @> array[$1::text]
         order by e.name
         limit $2",
    )
    .bind(name)
    .bind(i64::try_from(MAX_DEPENDENTS).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?;
    let total = rows
        .first()
        .map_or(0, |r| usize::try_from(r.total).unwrap_or(0));
    Ok(Dependents {
        items: rows.into_iter().map(|r| r.dependent).collect(),
        total,
    })
}

/// Which of `names` are entries of the registry now.
pub async fn existing(pool: &PgPool, names: &[String]) -> Result<HashSet<String>, RegistryError> {
    if names.is_empty() {
        return Ok(HashSet::new());
    }
    let found: Vec<String> = sqlx::query_scalar("select name from entries where name = any($1)")
        .bind(names)
        .fetch_all(pool)
        .await?;
    Ok(found.into_iter().collect())
}

/// The lifecycle of each of `names` that is an entry now (`None` inside
/// for an entry without one); names no entry has are absent.
pub async fn lifecycles(
    pool: &PgPool,
    names: &[String],
) -> Result<HashMap<String, Option<String>>, RegistryError> {
    if names.is_empty() {
        return Ok(HashMap::new());
    }
    let found: Vec<(String, Option<String>)> =
        sqlx::query_as("select name, lifecycle from entries where name = any($1)")
            .bind(names)
            .fetch_all(pool)
            .await?;
    Ok(found.into_iter().collect())
}
