//! The batch read: up to 100 repositories of one installation in one
//! GraphQL query, each with its archived flag, the head of its default
//! branch and the project file at that head — what the listing reads per
//! page, asked for by id instead of by account.
//!
//! Repositories are named by GraphQL node id (`nodes(ids:)`), which
//! survives renames and transfers. A repository whose node id Roster does
//! not know yet is asked for by name with an alias (`r0: repository(owner:,
//! name:)`), and the answer's `databaseId` must be the repository's id.
//! GitHub answers an id or a name it cannot resolve with `null` and an
//! error of type `NOT_FOUND` at that path; the caller then reads that one
//! repository over REST, whose 404 by id is what makes a removal definite.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::file_query::{with_fields, FileQuery};
use super::graphql::{rate_limit, repository_fields, GraphqlError, RepoNode, LIST_REPOSITORIES};

/// The fields read per repository, as the listing reads them, and its
/// node id.
macro_rules! repository_state {
    () => {
        concat!(
            "fragment RepositoryState on Repository {\nid\n",
            repository_fields!(),
            "}"
        )
    };
}

/// Repositories by node id (`$ids`, at most 100), each with its project
/// file (`$path`); [`read_query`] adds repositories asked for by name.
pub const READ_REPOSITORIES: &str = concat!(
    "query ReadRepositories($ids: [ID!]!, $path: String!) {\n",
    rate_limit!(),
    "  nodes(ids: $ids) {
    ... on Repository {
      ...RepositoryState
    }
  }
}
",
    repository_state!()
);

/// Most repositories one query asks for (GitHub's limit for `nodes`).
pub const MAX_PER_QUERY: usize = 100;

/// [`READ_REPOSITORIES`] plus `by_name` repositories asked for by name:
/// alias `r{k}` with variables `$o{k}` (owner) and `$n{k}` (name).
pub fn read_query(by_name: usize) -> String {
    if by_name == 0 {
        return READ_REPOSITORIES.to_owned();
    }
    let mut header = String::from("query ReadRepositories($ids: [ID!]!, $path: String!");
    let mut fields = String::new();
    for k in 0..by_name {
        header.push_str(&format!(", $o{k}: String!, $n{k}: String!"));
        fields.push_str(&format!(
            "  r{k}: repository(owner: $o{k}, name: $n{k}) {{\n    ...RepositoryState\n  }}\n"
        ));
    }
    format!(
        "{header}) {{\n{}  nodes(ids: $ids) {{\n    ... on Repository {{\n      ...RepositoryState\n    }}\n  }}\n{fields}}}\n{}",
        rate_limit!(),
        repository_state!()
    )
}

/// [`read_query`] asking the fields of `files` instead of one path.
pub fn read_query_for(files: &FileQuery, by_name: usize) -> String {
    with_fields(&read_query(by_name), &files.commit_fields())
}

/// The answer's data: `nodes` in the order of `$ids`, and one field per
/// alias. Each repository is kept as raw JSON and read on its own, so one
/// odd node (another type, a missing field) fails only that repository.
#[derive(Debug, Deserialize)]
pub struct ReadData {
    #[serde(default)]
    pub nodes: Vec<Value>,
    #[serde(rename = "rateLimit", default)]
    pub rate_limit: Option<Value>,
    #[serde(flatten)]
    pub aliases: HashMap<String, Value>,
}

/// Where a repository sits in the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// `nodes[k]`.
    Node(usize),
    /// Alias `r{k}`.
    Alias(usize),
}

impl ReadData {
    /// The repository at `slot`, when GitHub answered one there.
    pub fn repository(&self, slot: Slot) -> Option<RepoNode> {
        let value = match slot {
            Slot::Node(k) => self.nodes.get(k)?,
            Slot::Alias(k) => self.aliases.get(&format!("r{k}"))?,
        };
        if value.is_null() {
            return None;
        }
        RepoNode::deserialize(value).ok()
    }
}

/// The slot an error is about (`["nodes", 3, …]`, `["r2", …]`); `None`
/// when it names no repository of the query (then it spoils them all).
pub fn slot_of(error: &GraphqlError) -> Option<Slot> {
    match error.path.first()? {
        Value::String(field) if field == "nodes" => {
            let k = error.path.get(1)?.as_u64()?;
            Some(Slot::Node(usize::try_from(k).ok()?))
        }
        Value::String(field) => {
            let k = field.strip_prefix('r')?.parse().ok()?;
            Some(Slot::Alias(k))
        }
        _ => None,
    }
}

/// Every GraphQL query Roster sends, by name (checked against the schema).
/// The batch read's query with aliases is built per batch ([`read_query`]);
/// its test checks a built one too.
pub const QUERIES: &[(&str, &str)] = &[
    ("LIST_REPOSITORIES", LIST_REPOSITORIES),
    ("READ_REPOSITORIES", READ_REPOSITORIES),
    ("FILE_AT_COMMIT", super::checks_api::FILE_AT_COMMIT),
    ("READ_TEAMS", super::directory::READ_TEAMS),
    ("READ_MEMBERS", super::directory::READ_MEMBERS),
    ("READ_TEAM", super::directory::READ_TEAM),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_query_should_name_each_alias_and_its_variables() {
        let query = read_query(2);
        assert!(query.contains("$o1: String!, $n1: String!"), "{query}");
        assert!(query.contains("r0: repository(owner: $o0, name: $n0)"));
        assert!(query.contains("r1: repository(owner: $o1, name: $n1)"));
        assert_eq!(read_query(0), READ_REPOSITORIES);
    }

    #[test]
    fn an_answer_should_give_each_slot_its_repository() {
        let data: ReadData = serde_json::from_value(serde_json::json!({
            "rateLimit": {"limit": 5000, "remaining": 4999, "resetAt": "2026-01-01T00:00:00Z", "cost": 1},
            "nodes": [null, {"id": "R_2", "databaseId": 2, "name": "b", "owner": {"login": "acme"},
                              "isArchived": false, "url": null, "defaultBranchRef": null}, {}],
            "r0": {"id": "R_3", "databaseId": 3, "name": "c", "owner": {"login": "acme"},
                   "isArchived": true, "url": null, "defaultBranchRef": null},
            "r1": null,
        }))
        .unwrap();
        assert!(data.repository(Slot::Node(0)).is_none());
        assert_eq!(
            data.repository(Slot::Node(1)).and_then(|r| r.id),
            Some("R_2".to_owned())
        );
        assert!(data.repository(Slot::Node(2)).is_none(), "not a repository");
        assert_eq!(
            data.repository(Slot::Alias(0)).and_then(|r| r.database_id),
            Some(3)
        );
        assert!(data.repository(Slot::Alias(1)).is_none());
        assert!(data.repository(Slot::Node(7)).is_none());
    }

    #[test]
    fn an_error_should_name_its_slot() {
        let error = |path: serde_json::Value| -> GraphqlError {
            serde_json::from_value(
                serde_json::json!({"type": "NOT_FOUND", "message": "x", "path": path}),
            )
            .unwrap()
        };
        assert_eq!(
            slot_of(&error(serde_json::json!(["nodes", 3]))),
            Some(Slot::Node(3))
        );
        assert_eq!(
            slot_of(&error(serde_json::json!(["r12", "defaultBranchRef"]))),
            Some(Slot::Alias(12))
        );
        assert_eq!(slot_of(&error(serde_json::json!(["rateLimit"]))), None);
        assert_eq!(slot_of(&error(serde_json::json!([]))), None);
    }
}
