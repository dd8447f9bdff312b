//! Making repositories known: the row a repository gets as soon as a
//! listing or a webhook names it, before its first reconcile.

use std::collections::BTreeMap;

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgConnection, PgExecutor};

use super::repos::Locked;
use super::RegistryError;
use crate::db::one_statement::{self, Part};
use crate::source::{RepoId, RepoInfo};

/// Makes every listed repository visible before its first reconcile:
/// missing ones are inserted as `pending`, known ones get their current names.
///
/// Listings and webhooks call it so an id can be looked up (and resynced)
/// by name as soon as it is known. It runs on a pool, or on a transaction's
/// connection so a webhook commits it together with the rest of its writes.
pub async fn ensure_known<'e, E>(
    executor: E,
    repos: &[(RepoId, RepoInfo)],
) -> Result<(), RegistryError>
where
    E: PgExecutor<'e>,
{
    let repos: Vec<(RepoId, &RepoInfo, Option<&str>)> =
        repos.iter().map(|(id, info)| (*id, info, None)).collect();
    upsert_known(executor, &repos).await
}

/// [`ensure_known`] that also stores each repository's GraphQL node id
/// when it is given (a webhook's payload carries it), in the same
/// statement: the webhook's transaction stays as short as it was.
pub async fn ensure_known_with_node_ids<'e, E>(
    executor: E,
    repos: &[(RepoId, RepoInfo, Option<String>)],
) -> Result<(), RegistryError>
where
    E: PgExecutor<'e>,
{
    let repos: Vec<(RepoId, &RepoInfo, Option<&str>)> = repos
        .iter()
        .map(|(id, info, node)| (*id, info, node.as_deref()))
        .collect();
    upsert_known(executor, &repos).await
}

async fn upsert_known<'e, E>(
    executor: E,
    repos: &[(RepoId, &RepoInfo, Option<&str>)],
) -> Result<(), RegistryError>
where
    E: PgExecutor<'e>,
{
    let rows = KnownRows::new(repos);
    if !rows.is_empty() {
        one_statement::execute_one(executor, &rows).await?;
    }
    Ok(())
}

/// Inserts a repository not known yet as `pending`, returning its row
/// locked for the rest of the transaction, as [`super::repos::lock`] does;
/// `None` when a concurrent writer made it known first (lock it then).
/// A reconcile's first sight of a repository costs one statement, not
/// three, and knows the repository owns nothing yet.
pub(crate) async fn insert_locked(
    conn: &mut PgConnection,
    id: RepoId,
    info: &RepoInfo,
) -> Result<Option<Locked>, sqlx::Error> {
    sqlx::query_as(
        "insert into repositories (id, owner, name, installation_id, default_branch, html_url)
         select $1, $2, $3, $4, $5, $6
         where set_config('synchronous_commit', 'off', true) = 'off'
         on conflict (id) do nothing
         returning status, error, synced_sha, attempts, conflicts, file_blob,
                   owner, name, installation_id, default_branch, html_url, hold_id",
    )
    .bind(id)
    .bind(&info.owner)
    .bind(&info.name)
    .bind(info.installation_id.map(|i| i.0))
    .bind(&info.default_branch)
    .bind(info.html_url.as_deref())
    .fetch_optional(conn)
    .await
}

/// A repository's stored names as the columns of an `unnest`, one array
/// per column, in the order `id, owner, name, installation_id,
/// default_branch, html_url, node_id` ($1 to $7 of the statement part that
/// binds them first); an empty node id counts as none.
#[derive(Default)]
pub(super) struct RepoColumns<'a> {
    ids: Vec<i64>,
    owners: Vec<&'a str>,
    names: Vec<&'a str>,
    installations: Vec<Option<i64>>,
    branches: Vec<&'a str>,
    urls: Vec<Option<&'a str>>,
    nodes: Vec<Option<&'a str>>,
}

impl<'a> RepoColumns<'a> {
    pub fn push(&mut self, id: RepoId, info: &'a RepoInfo, node: Option<&'a str>) {
        self.ids.push(id.0);
        self.owners.push(&info.owner);
        self.names.push(&info.name);
        self.installations.push(info.installation_id.map(|i| i.0));
        self.branches.push(&info.default_branch);
        self.urls.push(info.html_url.as_deref());
        self.nodes.push(node.filter(|n| !n.is_empty()));
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
        args.add(&self.ids)?;
        args.add(&self.owners)?;
        args.add(&self.names)?;
        args.add(&self.installations)?;
        args.add(&self.branches)?;
        args.add(&self.urls)?;
        args.add(&self.nodes)?;
        Ok(())
    }
}

/// The upsert behind [`ensure_known`], as a [`Part`] so that a webhook
/// group writes it in the same statement as its enqueue and its records.
pub struct KnownRows<'a> {
    /// Leave out the rows an earlier part of the statement settled
    /// ([`crate::db::queue::SETTLED`]): they are written there.
    except_settled: bool,
    columns: RepoColumns<'a>,
}

impl<'a> KnownRows<'a> {
    /// One row per id (the last one wins), in id order so that concurrent
    /// writers lock rows in the same order.
    pub fn new(repos: &[(RepoId, &'a RepoInfo, Option<&'a str>)]) -> Self {
        let unique: BTreeMap<RepoId, (&RepoInfo, Option<&str>)> = repos
            .iter()
            .map(|(id, info, node)| (*id, (*info, *node)))
            .collect();
        let mut columns = RepoColumns::default();
        for (id, (info, node)) in unique {
            columns.push(id, info, node);
        }
        Self {
            except_settled: false,
            columns,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Leaves out the rows that the part named [`crate::db::queue::SETTLED`],
    /// earlier in the same statement, returns (a statement may not write a
    /// row twice).
    pub fn except_settled(mut self) -> Self {
        self.except_settled = true;
        self
    }
}

/// The upsert of [`KnownRows`].
const UPSERT: &str = "insert into repositories (id, owner, name, installation_id, default_branch, html_url, node_id)
         select g.* from unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[])
             as g(id, owner, name, installation_id, default_branch, html_url, node_id)
         where (select (r.owner, r.name, r.installation_id, r.default_branch, r.html_url, r.node_id)
                       is not distinct from
                       (g.owner, g.name, g.installation_id, g.default_branch, g.html_url,
                        coalesce(g.node_id, r.node_id))
                from repositories r where r.id = g.id) is not true
         order by 1
         on conflict (id) do update set
             owner = excluded.owner, name = excluded.name,
             installation_id = excluded.installation_id,
             default_branch = excluded.default_branch, html_url = excluded.html_url,
             node_id = coalesce(excluded.node_id, repositories.node_id),
             updated_at = now()
         where (repositories.owner, repositories.name, repositories.installation_id,
                repositories.default_branch, repositories.html_url, repositories.node_id)
               is distinct from
               (excluded.owner, excluded.name, excluded.installation_id,
                excluded.default_branch, excluded.html_url,
                coalesce(excluded.node_id, repositories.node_id))";

/// [`UPSERT`] leaving out the settled rows.
static UPSERT_EXCEPT_SETTLED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    UPSERT.replacen(
        "is not true\n         order by 1",
        "is not true\n           and g.id not in (select id from settled)\n         order by 1",
        1,
    )
});

impl Part for KnownRows<'_> {
    fn sql(&self) -> &'static str {
        // A row already as given is not written (nor its index entries).
        if self.except_settled {
            &UPSERT_EXCEPT_SETTLED
        } else {
            UPSERT
        }
    }

    fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
        self.columns.add_to(args)
    }
}

#[cfg(test)]
mod tests {
    use sqlx::PgPool;

    use super::*;

    fn info(name: &str, installation: Option<i64>) -> RepoInfo {
        match installation {
            Some(installation) => crate::testing::github_repo("acme", name, installation),
            None => crate::testing::repo_info("acme", name),
        }
    }

    /// The row's version (`xmin`) and lock mark (`xmax`): both stay as they
    /// are only when no statement wrote or locked the row.
    async fn version(pool: &PgPool, id: i64) -> (String, String, String) {
        sqlx::query_as("select xmin::text, xmax::text, name from repositories where id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("the row")
    }

    #[test]
    fn the_upsert_except_settled_should_leave_out_the_settled_rows() {
        assert_ne!(UPSERT_EXCEPT_SETTLED.as_str(), UPSERT);
        let settled = format!("(select id from {})", crate::db::queue::SETTLED);
        assert!(UPSERT_EXCEPT_SETTLED.contains(&settled));
    }

    #[tokio::test]
    async fn a_repository_known_as_given_should_be_left_unwritten_and_unlocked() {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        // One with every field, one without the GitHub ones (nulls compare too).
        let repos = [
            (RepoId(1), info("a", Some(7)), Some("R_1".to_owned())),
            (RepoId(2), info("b", None), None),
        ];
        ensure_known_with_node_ids(&pool, &repos)
            .await
            .expect("known");
        let (one, two) = (version(&pool, 1).await, version(&pool, 2).await);

        // As given, and a node id left out (the stored one stands).
        let again = [
            (RepoId(1), info("a", Some(7)), None),
            (RepoId(2), info("b", None), None),
        ];
        ensure_known_with_node_ids(&pool, &again)
            .await
            .expect("known again");
        assert_eq!(version(&pool, 1).await, one);
        assert_eq!(version(&pool, 2).await, two);

        // A rename is written.
        ensure_known(&pool, &[(RepoId(2), info("b2", None))])
            .await
            .expect("renamed");
        assert_eq!(version(&pool, 2).await.2, "b2");
    }
}
