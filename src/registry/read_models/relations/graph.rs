//! A project's neighbourhood, or the whole registry, as nodes and edges
//! (docs/contract.md#relations). A node is an entry, or a name that some
//! entry depends on and no entry has (an unknown dependency); an edge goes
//! from a dependent to what it depends on. Cycles are kept as they are.
//!
//! Reading is bounded: at most `cap` nodes are read, whatever the registry
//! holds, so a registry where everything depends on everything costs no
//! more than one that fits; `complete` says whether anything was left out.
//! And it is bounded in time: a graph is read in one transaction, on one
//! connection, whose statements each stop after [`GRAPH_STATEMENT_TIMEOUT`]
//! ([`RegistryError::TooLong`]); who depends on a set of names is asked of
//! the index on `depends_on`, name by name ([`DEPENDENTS_SQL`]).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use crate::project::ResolvedOwner;
use crate::registry::RegistryError;

/// The deepest neighbourhood asked for: three steps each way.
pub const MAX_DEPTH: u8 = 3;

/// The most nodes one graph reads; more than an answer of 1 MiB can hold.
pub const MAX_GRAPH_NODES: usize = 20_000;

/// The longest one statement of a graph read may run. The read of every
/// dependent of a hub that 10,000 projects depend on, at depth 3, takes
/// some 0.2 s; a read that takes ten times that holds a connection others
/// need.
pub const GRAPH_STATEMENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The entries that depend on any of `$1` (by name, at most `$2`): one
/// lookup in the GIN index on `depends_on` per name. An overlap
/// (`depends_on && $1`) compared every entry's array with all of `$1`,
/// seconds for the 10,000 names of a hub's dependents.
pub const DEPENDENTS_SQL: &str = "select e.name, e.owner, e.owner_status, e.owner_team_id,
            e.owner_slug, e.system, e.lifecycle, r.owner || '/' || r.name as repo, e.path,
            e.depends_on
     from entries e join repositories r on r.id = e.repo_id
     where e.name in (select d.name from unnest($1::text[]) as w(name)
                    join entries d on d.depends_on @> array[w.name])
     order by e.name limit $2";

/// One project of a graph, or a name no project has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// The entry of that name; `None` for an unknown dependency.
    pub entry: Option<NodeEntry>,
    /// Steps from the root (0 for the root, and in a whole-registry graph).
    pub distance: u8,
}

crate::row! {
    /// What a graph shows of an entry.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct NodeEntry {
        pub owner: String,
        pub resolved: ResolvedOwner as flatten,
        pub system: Option<String>,
        pub lifecycle: Option<String>,
        /// `owner/name` of its repository.
        pub repo: String,
        pub path: String,
        pub depends_on: Vec<String>,
    }
}

crate::row! {
    struct NodeRow {
        name: String,
        entry: NodeEntry as flatten,
    }
}

/// Nodes in the order they were reached (the root first), and the edges
/// between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// `(from, to)`: `from` depends on `to`; both are nodes.
    pub edges: Vec<(String, String)>,
    /// False when the cap left nodes out.
    pub complete: bool,
}

const NODE_SELECT: &str = "select e.name, e.owner, e.owner_status, e.owner_team_id, e.owner_slug,
            e.system, e.lifecycle, r.owner || '/' || r.name as repo, e.path, e.depends_on
     from entries e join repositories r on r.id = e.repo_id";

fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Gathers nodes once each, up to a cap.
struct Gather {
    nodes: Vec<Node>,
    seen: HashSet<String>,
    cap: usize,
    complete: bool,
}

impl Gather {
    fn new(cap: usize) -> Self {
        Self {
            nodes: Vec::new(),
            seen: HashSet::new(),
            cap: cap.max(1),
            complete: true,
        }
    }

    fn room(&self) -> usize {
        self.cap.saturating_sub(self.nodes.len())
    }

    /// Adds `node` unless it is there; false when it was not added.
    fn add(&mut self, node: Node) -> bool {
        if self.seen.contains(&node.name) {
            return false;
        }
        if self.room() == 0 {
            self.complete = false;
            return false;
        }
        self.seen.insert(node.name.clone());
        self.nodes.push(node);
        true
    }

    fn finish(self) -> Graph {
        let mut edges = Vec::new();
        for node in &self.nodes {
            for to in node.entry.iter().flat_map(|e| &e.depends_on) {
                if self.seen.contains(to) {
                    edges.push((node.name.clone(), to.clone()));
                }
            }
        }
        Graph {
            nodes: self.nodes,
            edges,
            complete: self.complete,
        }
    }
}

fn found(row: NodeRow, distance: u8) -> Node {
    Node {
        name: row.name,
        entry: Some(row.entry),
        distance,
    }
}

/// The root, what it depends on and what depends on it, `depth` steps
/// each way (clamped to `1..=MAX_DEPTH`), at most `cap` nodes; `None`
/// when no entry has that name.
pub async fn neighbourhood(
    pool: &PgPool,
    root: &str,
    depth: u8,
    cap: usize,
) -> Result<Option<Graph>, RegistryError> {
    let mut tx = pool.begin().await?;
    set_timeout(&mut tx).await?;
    let graph = read_neighbourhood(&mut tx, root, depth, cap)
        .await
        .map_err(overrun)?;
    tx.commit().await?;
    Ok(graph)
}

/// Bounds each statement of the transaction on `conn`.
async fn set_timeout(conn: &mut PgConnection) -> Result<(), RegistryError> {
    let ms = GRAPH_STATEMENT_TIMEOUT.as_millis().to_string();
    sqlx::query("select set_config('statement_timeout', $1, true)")
        .bind(ms)
        .execute(conn)
        .await?;
    Ok(())
}

/// A statement cancelled by its timeout is [`RegistryError::TooLong`].
fn overrun(error: sqlx::Error) -> RegistryError {
    match &error {
        sqlx::Error::Database(e) if e.code().as_deref() == Some("57014") => {
            RegistryError::TooLong {
                what: "graph reads",
            }
        }
        _ => RegistryError::Database(error),
    }
}

async fn read_neighbourhood(
    conn: &mut PgConnection,
    root: &str,
    depth: u8,
    cap: usize,
) -> Result<Option<Graph>, sqlx::Error> {
    let Some(row) = sqlx::query_as::<_, NodeRow>(&format!("{NODE_SELECT} where e.name = $1"))
        .bind(root)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(None);
    };
    let mut gather = Gather::new(cap);
    let mut wanted: Vec<String> = row.entry.depends_on.clone();
    let mut dependents_of = vec![row.name.clone()];
    gather.add(found(row, 0));
    for distance in 1..=depth.clamp(1, MAX_DEPTH) {
        wanted.retain(|name| !gather.seen.contains(name));
        wanted.sort();
        wanted.dedup();
        wanted.truncate(gather.room() + 1);
        let rows: Vec<NodeRow> = sqlx::query_as(&format!("{NODE_SELECT} where e.name = any($1)"))
            .bind(&wanted)
            .fetch_all(&mut *conn)
            .await?;
        let mut next_wanted = Vec::new();
        let mut rows: HashMap<String, NodeRow> =
            rows.into_iter().map(|r| (r.name.clone(), r)).collect();
        for name in wanted {
            let node = match rows.remove(&name) {
                Some(row) => {
                    next_wanted.extend(row.entry.depends_on.iter().cloned());
                    found(row, distance)
                }
                None => Node {
                    name,
                    entry: None,
                    distance,
                },
            };
            gather.add(node);
        }
        let rows: Vec<NodeRow> = sqlx::query_as(DEPENDENTS_SQL)
            .bind(&dependents_of)
            .bind(limit(gather.room() + gather.seen.len() + 1))
            .fetch_all(&mut *conn)
            .await?;
        let mut next_dependents = Vec::new();
        for row in rows {
            let name = row.name.clone();
            if gather.add(found(row, distance)) {
                next_dependents.push(name);
            }
        }
        wanted = next_wanted;
        dependents_of = next_dependents;
        if gather.room() == 0 {
            // Whatever comes next cannot be kept.
            gather.complete &= wanted.is_empty() && dependents_of.is_empty();
            break;
        }
    }
    Ok(Some(gather.finish()))
}

/// Every entry by name, then the unknown names they depend on, at most
/// `cap` nodes.
pub async fn whole_registry(pool: &PgPool, cap: usize) -> Result<Graph, RegistryError> {
    let mut tx = pool.begin().await?;
    set_timeout(&mut tx).await?;
    let graph = read_whole_registry(&mut tx, cap).await.map_err(overrun)?;
    tx.commit().await?;
    Ok(graph)
}

async fn read_whole_registry(conn: &mut PgConnection, cap: usize) -> Result<Graph, sqlx::Error> {
    let rows: Vec<NodeRow> = sqlx::query_as(&format!("{NODE_SELECT} order by e.name limit $1"))
        .bind(limit(cap.max(1) + 1))
        .fetch_all(&mut *conn)
        .await?;
    let mut gather = Gather::new(cap);
    let mut targets = Vec::new();
    for row in rows {
        targets.extend(row.entry.depends_on.iter().cloned());
        gather.add(found(row, 0));
    }
    targets.retain(|name| !gather.seen.contains(name));
    targets.sort();
    targets.dedup();
    // A name past the cap may be an entry that was not read: only names no
    // entry has are unknown.
    let there: HashSet<String> = match targets.is_empty() {
        true => HashSet::new(),
        false => sqlx::query_scalar("select name from entries where name = any($1)")
            .bind(&targets)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect(),
    };
    for name in targets.into_iter().filter(|n| !there.contains(n)) {
        gather.add(Node {
            name,
            entry: None,
            distance: 0,
        });
    }
    if !there.is_empty() {
        gather.complete = false;
    }
    Ok(gather.finish())
}
