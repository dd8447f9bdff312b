//! `POST /graphql` for a push's touched files (`query ReadTouched`):
//! repositories by node id (`rK: node(id: $iK)`), each with the file at
//! each touched path (`fJ: file(path: $pK_J)`) inside commit `$cK`
//! (`at: object(oid:)`), answered from the world as GitHub would: an id
//! the installation cannot see is `null` with a `NOT_FOUND` error at its
//! alias, an unknown commit is `at: null`, a missing path `null`.

use serde_json::{json, Map, Value};

use super::rest::Answer;
use super::world::{Budget, World};

/// Whether `query` is the read of a push's touched files.
pub fn is_touched(query: &str) -> bool {
    query.contains("query ReadTouched")
}

pub fn answer(world: &World, installation: i64, request: &Value, budget: Budget) -> Answer {
    let variables = request.get("variables").cloned().unwrap_or(Value::Null);
    let var = |name: &str| variables.get(name).and_then(Value::as_str);
    let mut data = Map::new();
    data.insert("rateLimit".into(), super::graphql::rate_limit(budget));
    let mut errors = Vec::new();
    for k in 0.. {
        let (Some(node_id), Some(oid)) = (var(&format!("i{k}")), var(&format!("c{k}"))) else {
            break;
        };
        let alias = format!("r{k}");
        let repo = node_id
            .strip_prefix("R_")
            .and_then(|n| n.parse::<i64>().ok())
            .and_then(|n| world.repos.get(&n))
            .filter(|r| r.installation == installation);
        let Some(repo) = repo else {
            errors.push(json!({
                "type": "NOT_FOUND", "path": [alias],
                "message": format!("Could not resolve to a node with the global id of '{node_id}'"),
            }));
            data.insert(alias, Value::Null);
            continue;
        };
        let at = repo.commits.get(oid).map(|commit| {
            let mut files = Map::new();
            for j in 0.. {
                let Some(path) = var(&format!("p{k}_{j}")) else {
                    break;
                };
                let file = super::graphql::file_entry(world, commit, oid, path);
                files.insert(format!("f{j}"), file);
            }
            Value::Object(files)
        });
        data.insert(
            alias,
            json!({
                "id": super::graphql::node_id(repo),
                "databaseId": repo.id,
                "name": repo.name,
                "owner": {"login": repo.owner},
                "isArchived": repo.archived,
                "url": format!("https://github.com/{}/{}", repo.owner, repo.name),
                "defaultBranchRef": {"name": repo.default_branch},
                "at": at,
            }),
        );
    }
    let mut body = json!({ "data": data });
    if !errors.is_empty() {
        body["errors"] = Value::Array(errors);
    }
    Answer::json(200, body)
}
