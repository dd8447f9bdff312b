//! GitHub's GraphQL node ids of repositories, so a batch of repositories
//! can be read by id in one query (`nodes(ids:)`) whatever their names.

use std::collections::BTreeMap;

use sqlx::PgExecutor;

use super::RegistryError;
use crate::source::RepoId;

/// Stores the node ids learnt for known repositories (unknown ids are
/// skipped: a node id alone does not make a repository known). Rows whose
/// node id is already the same are not written.
pub async fn record_node_ids<'e, E>(
    executor: E,
    node_ids: &[(RepoId, String)],
) -> Result<(), RegistryError>
where
    E: PgExecutor<'e>,
{
    // One per id, in id order so that concurrent callers lock in one order.
    let unique: BTreeMap<i64, &str> = node_ids
        .iter()
        .filter(|(_, node)| !node.is_empty())
        .map(|(id, node)| (id.0, node.as_str()))
        .collect();
    if unique.is_empty() {
        return Ok(());
    }
    let (ids, nodes): (Vec<i64>, Vec<&str>) = unique.into_iter().unzip();
    sqlx::query(
        "with learnt as (select * from unnest($1::bigint[], $2::text[]) as t(id, node_id)),
         locked as (
             select r.id from repositories r join learnt on learnt.id = r.id
             where r.node_id is distinct from learnt.node_id
             order by r.id for update of r
         )
         update repositories r set node_id = learnt.node_id
         from learnt join locked on locked.id = learnt.id
         where r.id = learnt.id",
    )
    .bind(ids)
    .bind(nodes)
    .execute(executor)
    .await?;
    Ok(())
}
