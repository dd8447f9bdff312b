//! Relations as the API shows them (docs/contract.md#relations): an entry
//! with its dependents and the status of each dependency, a graph bounded
//! to one answer, and the systems.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::EntryJson;
use crate::registry::budget::{json_len, ITEMS_BUDGET};
use crate::registry::read_models::relations::{
    Dependent, Dependents, Graph, Node, System, MAX_SYSTEM_PROJECTS,
};
use crate::web::privacy::Privacy;

/// Whether a dependency names a project of the registry now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DependencyStatus {
    Resolved,
    Unknown,
}

/// One dependency of an entry and its status, in the order the file
/// declares them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DependencyJson {
    pub name: String,
    pub status: DependencyStatus,
}

/// An entry that depends on another, and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DependentJson {
    pub name: String,
    /// `owner/name` of its repository.
    pub repo: String,
    /// The project file that declares it.
    pub path: String,
}

impl From<Dependent> for DependentJson {
    fn from(d: Dependent) -> Self {
        Self {
            name: d.name,
            repo: d.repo,
            path: d.path,
        }
    }
}

/// `GET /api/v1/projects/{name}`: the entry, who depends on it (the first
/// 1,000 by name; `dependents_count` counts them all) and whether each of
/// its dependencies resolves.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProjectJson {
    #[serde(flatten)]
    pub entry: EntryJson,
    pub dependents: Vec<DependentJson>,
    pub dependents_count: usize,
    pub depends_on_status: Vec<DependencyJson>,
}

impl ProjectJson {
    /// `entry` with its `dependents`; `resolves` tells which names exist.
    pub fn new(entry: EntryJson, dependents: Dependents, resolves: impl Fn(&str) -> bool) -> Self {
        let depends_on_status = entry
            .fields
            .depends_on
            .iter()
            .map(|name| DependencyJson {
                status: if resolves(name) {
                    DependencyStatus::Resolved
                } else {
                    DependencyStatus::Unknown
                },
                name: name.clone(),
            })
            .collect();
        Self {
            entry,
            dependents: dependents.items.into_iter().map(Into::into).collect(),
            dependents_count: dependents.total,
            depends_on_status,
        }
    }
}

/// A project of a graph, or a name no project has (`status: unknown`,
/// everything but the name null). `owner` is null when the reader may not
/// see it (docs/contract.md#what-a-reader-without-credentials-sees).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct GraphNodeJson {
    pub name: String,
    pub owner: Option<String>,
    pub system: Option<String>,
    pub lifecycle: Option<String>,
    /// `owner/name` of its repository.
    pub repo: Option<String>,
    pub status: DependencyStatus,
}

impl GraphNodeJson {
    fn new(node: &Node, privacy: &Privacy) -> Self {
        let entry = node.entry.as_ref();
        Self {
            name: node.name.clone(),
            owner: entry
                .filter(|e| !privacy.hides(&e.resolved))
                .map(|e| e.owner.clone()),
            system: entry.and_then(|e| e.system.clone()),
            lifecycle: entry.and_then(|e| e.lifecycle.clone()),
            repo: entry.map(|e| e.repo.clone()),
            status: match entry {
                Some(_) => DependencyStatus::Resolved,
                None => DependencyStatus::Unknown,
            },
        }
    }
}

/// `from` depends on `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EdgeJson {
    pub from: String,
    pub to: String,
}

/// `GET /api/v1/graph`: nodes, the edges between them, and whether
/// anything was left out to keep the answer within 1 MiB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct GraphJson {
    pub nodes: Vec<GraphNodeJson>,
    pub edges: Vec<EdgeJson>,
    pub truncated: bool,
}

impl GraphJson {
    /// The nodes of `graph` in its order, each with its edges to the nodes
    /// before it, as long as they fit in one answer's bytes.
    pub fn fit(graph: &Graph, privacy: &Privacy) -> Self {
        let mut outgoing: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut incoming: HashMap<&str, Vec<&str>> = HashMap::new();
        for (from, to) in &graph.edges {
            outgoing.entry(from).or_default().push(to);
            incoming.entry(to).or_default().push(from);
        }
        let mut kept: HashSet<&str> = HashSet::new();
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        let mut used = 0;
        let mut truncated = !graph.complete;
        for node in &graph.nodes {
            let shown = GraphNodeJson::new(node, privacy);
            let name = node.name.as_str();
            let mut new_edges = Vec::new();
            let mut edge = |from: &str, to: &str| {
                new_edges.push(EdgeJson {
                    from: from.to_owned(),
                    to: to.to_owned(),
                })
            };
            for to in outgoing.get(name).into_iter().flatten() {
                if kept.contains(to) || *to == name {
                    edge(name, to);
                }
            }
            for from in incoming.get(name).into_iter().flatten() {
                if kept.contains(from) && *from != name {
                    edge(from, name);
                }
            }
            let cost =
                json_len(&shown) + 1 + new_edges.iter().map(|e| json_len(e) + 1).sum::<usize>();
            if used + cost > ITEMS_BUDGET {
                truncated = true;
                break;
            }
            used += cost;
            kept.insert(name);
            nodes.push(shown);
            edges.extend(new_edges);
        }
        Self {
            nodes,
            edges,
            truncated,
        }
    }
}

/// An owner of some of a system's projects, and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SystemOwnerJson {
    pub owner: String,
    pub projects: i64,
}

/// A system: its projects (the first 1,000 by name; `project_count`
/// counts them all) and the owners of those the reader may see, the
/// owner of the most projects first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct SystemJson {
    pub name: String,
    pub projects: Vec<String>,
    pub project_count: usize,
    pub owners: Vec<SystemOwnerJson>,
}

/// The most owners a system lists.
const MAX_SYSTEM_OWNERS: usize = 100;

impl SystemJson {
    /// `system` as the reader may see it.
    pub fn new(system: System, privacy: &Privacy) -> Self {
        let owners = system
            .owners
            .into_iter()
            .filter(|o| !privacy.hides(&o.resolved))
            .take(MAX_SYSTEM_OWNERS)
            .map(|o| SystemOwnerJson {
                owner: o.owner,
                projects: o.projects,
            })
            .collect();
        let mut projects = system.projects;
        projects.truncate(MAX_SYSTEM_PROJECTS);
        Self {
            name: system.name,
            projects,
            project_count: system.project_count,
            owners,
        }
    }
}
