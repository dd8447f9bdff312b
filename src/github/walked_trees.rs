//! The last walk of each repository's Git tree (table `walked_trees`):
//! which root tree was walked, for which patterns, and the matching entries
//! found, so an unchanged tree is not asked for again.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use crate::source::RepoId;

/// One matching entry of a walked tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkedEntry {
    pub path: String,
    /// Git's object type: `blob`, `tree` or `commit` (a submodule).
    pub kind: String,
    /// Git's mode, as the trees API writes it (`100644`, `120000`, …).
    pub mode: String,
}

/// A repository's last walk.
#[derive(Debug, Clone)]
pub struct Walk {
    pub patterns: String,
    pub tree_oid: String,
    pub entries: Vec<WalkedEntry>,
}

/// The last walks of `ids` (repositories never walked are absent).
pub async fn load(pool: &PgPool, ids: &[RepoId]) -> Result<HashMap<RepoId, Walk>, sqlx::Error> {
    let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
    let rows: Vec<(i64, String, String, sqlx::types::Json<Vec<WalkedEntry>>)> = sqlx::query_as(
        "select repo_id, patterns, tree_oid, entries from walked_trees where repo_id = any($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, patterns, tree_oid, entries)| {
            let walk = Walk {
                patterns,
                tree_oid,
                entries: entries.0,
            };
            (RepoId(id), walk)
        })
        .collect())
}

/// Records the walks just made, replacing older ones (one statement).
pub async fn save(pool: &PgPool, walks: &[(RepoId, Walk)]) -> Result<(), sqlx::Error> {
    if walks.is_empty() {
        return Ok(());
    }
    let mut unique: HashMap<i64, &Walk> = HashMap::new();
    for (id, walk) in walks {
        unique.insert(id.0, walk);
    }
    let mut ids = Vec::new();
    let mut patterns = Vec::new();
    let mut oids = Vec::new();
    let mut entries = Vec::new();
    for (id, walk) in unique {
        ids.push(id);
        patterns.push(walk.patterns.clone());
        oids.push(walk.tree_oid.clone());
        entries.push(serde_json::to_value(&walk.entries).unwrap_or_default());
    }
    sqlx::query(
        "insert into walked_trees (repo_id, patterns, tree_oid, entries, walked_at)
         select id, p, o, e, now()
         from unnest($1::bigint[], $2::text[], $3::text[], $4::jsonb[]) as t(id, p, o, e)
         on conflict (repo_id) do update set patterns = excluded.patterns,
             tree_oid = excluded.tree_oid, entries = excluded.entries,
             walked_at = excluded.walked_at",
    )
    .bind(&ids)
    .bind(&patterns)
    .bind(&oids)
    .bind(&entries)
    .execute(pool)
    .await?;
    Ok(())
}
