//! `POST /graphql`: answers the listing query and the batch read
//! (`nodes(ids:)` and `rN: repository(owner:, name:)` aliases) from the
//! world's state, the way GitHub does: an id or a name the installation
//! cannot see is `null` with an error of type `NOT_FOUND` at its path, and
//! every answer reports the rate limit and the query's cost. The query text
//! itself is checked against GitHub's schema elsewhere
//! (`tests/graphql_schema.rs`); here only its variables matter.

use serde_json::{json, Value};

use super::rest::Answer;
use super::world::{Budget, Repo, World};

/// Repositories per page, as the query asks (`first: 100`).
pub const PAGE_SIZE: usize = 100;

/// GitHub's cap on `Blob.text`; longer texts come back truncated.
const TEXT_CAP: usize = 512 * 1024;

/// The 1-based page a listing request asks for (from its `after` cursor).
pub fn page_of(request: &Value) -> Option<usize> {
    let query = request.get("query")?.as_str()?;
    if !query.contains("repositoryOwner") {
        return None;
    }
    Some(offset_of(request.pointer("/variables/after")) / PAGE_SIZE + 1)
}

fn offset_of(after: Option<&Value>) -> usize {
    after
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix("cursor:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

pub fn answer(world: &World, installation: i64, request: &Value, budget: Budget) -> Answer {
    let Some(query) = request.get("query").and_then(Value::as_str) else {
        return Answer::json(
            200,
            json!({"errors": [{"message": "A query attribute must be specified and must be a string."}]}),
        );
    };
    if is_read(query) {
        return read(world, installation, query, request, budget);
    }
    if is_file_at_commit(query) {
        return file_at_commit(world, installation, query, request);
    }
    if !query.contains("repositoryOwner") {
        return Answer::json(
            200,
            json!({"errors": [{"type": "UNKNOWN", "message": "the fake only answers the listing query and the batch read"}]}),
        );
    }
    let owner = request
        .pointer("/variables/owner")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let path = request
        .pointer("/variables/path")
        .and_then(Value::as_str)
        .unwrap_or("project.yaml");
    let offset = offset_of(request.pointer("/variables/after"));
    let rate_limit = rate_limit(budget);
    let owns = world
        .installations
        .get(&installation)
        .is_some_and(|i| i.login.eq_ignore_ascii_case(owner));
    if !owns {
        return Answer::json(
            200,
            json!({"data": {"rateLimit": rate_limit, "repositoryOwner": null}}),
        );
    }
    let repos: Vec<&Repo> = world
        .repos
        .values()
        .filter(|r| r.installation == installation && r.owner.eq_ignore_ascii_case(owner))
        .collect();
    let first = request
        .pointer("/variables/first")
        .and_then(Value::as_u64)
        .map_or(PAGE_SIZE, |n| usize::try_from(n).unwrap_or(PAGE_SIZE));
    let mut entries = 0;
    let nodes: Vec<Value> = repos
        .iter()
        .skip(offset)
        .take(first.min(PAGE_SIZE))
        .map(|r| node(world, r, path, query, &mut entries))
        .collect();
    if let Some(refused) = refusal(world, entries) {
        return refused;
    }
    let end = offset + nodes.len();
    let has_next = end < repos.len();
    Answer::json(
        200,
        json!({"data": {
            "rateLimit": rate_limit,
            "repositoryOwner": {"repositories": {
                "pageInfo": {
                    "hasNextPage": has_next,
                    "endCursor": if nodes.is_empty() { Value::Null } else { json!(format!("cursor:{end}")) },
                },
                "nodes": nodes,
            }},
        }}),
    )
}

fn node(world: &World, repo: &Repo, path: &str, query: &str, entries: &mut usize) -> Value {
    let branch = repo.head().map(|commit| {
        if super::trees::asks_files(query) {
            let (mut fields, count) = super::trees::commit_fields(world, commit, query);
            *entries += count;
            fields.insert("oid".into(), json!(commit.sha));
            return json!({"name": repo.default_branch, "target": fields});
        }
        let file = match commit.files.get(path) {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes)
                    .ok()
                    .filter(|t| !t.contains('\0'));
                let truncated = bytes.len() > TEXT_CAP;
                let link = world
                    .symlinks
                    .contains(&(commit.sha.clone(), path.to_owned()));
                json!({"mode": if link { 40960 } else { 33188 }, "object": {
                    "oid": roster::registry::settled_pushes::blob_id(bytes),
                    "byteSize": bytes.len(),
                    "isBinary": text.is_none(),
                    "isTruncated": truncated,
                    "text": text.map(|t| if truncated { truncate(t, TEXT_CAP) } else { t }),
                }})
            }
            None if commit
                .files
                .keys()
                .any(|p| p.starts_with(&format!("{path}/"))) =>
            {
                // A tree: none of the Blob fragment's fields apply.
                json!({"mode": 16384, "object": {}})
            }
            None => Value::Null,
        };
        json!({"name": repo.default_branch, "target": {"oid": commit.sha, "file": file}})
    });
    json!({
        "databaseId": repo.id,
        "name": repo.name,
        "owner": {"login": repo.owner},
        "isArchived": repo.archived,
        "isPrivate": repo.private,
        "url": format!("https://github.com/{}/{}", repo.owner, repo.name),
        "defaultBranchRef": branch,
    })
}

/// GitHub's `rateLimit` object, as the budget stands before this query.
pub(super) fn rate_limit(budget: Budget) -> Value {
    let reset_at: chrono::DateTime<chrono::Utc> =
        chrono::DateTime::from_timestamp(i64::try_from(budget.reset).unwrap_or(0), 0)
            .unwrap_or_default();
    json!({
        "limit": budget.limit,
        "remaining": budget.remaining,
        "resetAt": reset_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "cost": 1,
    })
}

/// Whether `query` is the batch read (by node id and by name).
pub fn is_read(query: &str) -> bool {
    query.contains("nodes(ids:")
}

/// Whether `query` reads the project file at one commit (`object(oid:)`).
pub fn is_file_at_commit(query: &str) -> bool {
    query.contains("object(oid:")
}

/// The file at a commit: `repository(owner:, name:) { object(oid:) { …
/// on Commit { file(path:) { mode object { … on Blob } } } } }`, or the
/// files `fJ: file(path: $pJ)` of a pull request's read. An unknown commit
/// is `object: null`, as GitHub answers it.
fn file_at_commit(world: &World, installation: i64, query: &str, request: &Value) -> Answer {
    let var = |name: &str| {
        request
            .pointer(&format!("/variables/{name}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (owner, name, oid, path) = (var("owner"), var("name"), var("oid"), var("path"));
    let Some(repo) = super::rest::visible_by_name(world, installation, &owner, &name) else {
        return Answer::json(
            200,
            json!({"data": {"repository": null}, "errors": [{
                "type": "NOT_FOUND", "path": ["repository"],
                "message": format!("Could not resolve to a Repository with the name '{owner}/{name}'."),
            }]}),
        );
    };
    let Some(commit) = repo.commits.get(&oid) else {
        return Answer::json(200, json!({"data": {"repository": {"object": null}}}));
    };
    if request.pointer("/variables/p0").is_some() {
        // A pull request's files: `fJ: file(path: $pJ)` for each path.
        let mut fields = serde_json::Map::new();
        for j in 0.. {
            let Some(path) = request
                .pointer(&format!("/variables/p{j}"))
                .and_then(Value::as_str)
            else {
                break;
            };
            fields.insert(format!("f{j}"), file_entry(world, commit, &oid, path));
        }
        return Answer::json(200, json!({"data": {"repository": {"object": fields}}}));
    }
    if super::trees::asks_files(query) {
        let (fields, entries) = super::trees::commit_fields(world, commit, query);
        if let Some(refused) = refusal(world, entries) {
            return refused;
        }
        return Answer::json(200, json!({"data": {"repository": {"object": fields}}}));
    }
    let file = file_entry(world, commit, &oid, &path);
    Answer::json(
        200,
        json!({"data": {"repository": {"object": {"file": file}}}}),
    )
}

/// What `file(path:)` answers for `path` at `commit` (sha `oid`): the
/// entry's mode and blob, a tree's mode, or `null` when nothing is there.
pub(super) fn file_entry(
    world: &World,
    commit: &super::world::Commit,
    oid: &str,
    path: &str,
) -> Value {
    match commit.files.get(path) {
        Some(bytes) if world.symlinks.contains(&(oid.to_owned(), path.to_owned())) => {
            json!({"mode": 40960, "object": blob(bytes)})
        }
        Some(bytes) => json!({"mode": 33188, "object": blob(bytes)}),
        None if commit
            .files
            .keys()
            .any(|p| p.starts_with(&format!("{path}/"))) =>
        {
            json!({"mode": 16384, "object": {}})
        }
        None => Value::Null,
    }
}

/// A blob as GitHub describes it: no text for binary content (GitHub
/// takes bytes that are not UTF-8, or that hold NUL, as binary).
pub(super) fn blob(bytes: &[u8]) -> Value {
    let text = std::str::from_utf8(bytes)
        .ok()
        .filter(|t| !t.contains('\0'));
    let truncated = bytes.len() > TEXT_CAP;
    json!({
        "oid": roster::registry::settled_pushes::blob_id(bytes),
        "byteSize": bytes.len(),
        "isBinary": text.is_none(),
        "isTruncated": truncated,
        "text": text.map(|t| if truncated { truncate(t, TEXT_CAP) } else { t }),
    })
}

/// The node id of a repository, as the fake's REST answers and webhooks
/// give it.
pub fn node_id(repo: &Repo) -> String {
    format!("R_{}", repo.id)
}

/// The batch read: `nodes` in the order of `$ids`, then each alias `r{k}`
/// asked with `$o{k}`/`$n{k}`.
fn read(world: &World, installation: i64, query: &str, request: &Value, budget: Budget) -> Answer {
    let variables = request.get("variables").cloned().unwrap_or(Value::Null);
    let path = variables
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("project.yaml");
    let visible = |repo: &&Repo| repo.installation == installation;
    let mut errors = Vec::new();
    let mut entries = 0;
    let ids: Vec<&str> = variables
        .get("ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if ids.len() > 100 {
        return Answer::json(
            200,
            json!({"errors": [{"type": "EXCESSIVE_PAGINATION", "message": "You may not ask for more than 100 nodes at once."}]}),
        );
    }
    let nodes: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            let found = id
                .strip_prefix("R_")
                .and_then(|n| n.parse::<i64>().ok())
                .and_then(|n| world.repos.get(&n))
                .filter(visible);
            match found {
                Some(repo) => with_id(world, repo, path, query, &mut entries),
                None => {
                    errors.push(json!({
                        "type": "NOT_FOUND",
                        "path": ["nodes", k],
                        "locations": [{"line": 8, "column": 3}],
                        "message": format!("Could not resolve to a node with the global id of '{id}'"),
                    }));
                    Value::Null
                }
            }
        })
        .collect();
    let mut data = json!({"rateLimit": rate_limit(budget), "nodes": nodes});
    for k in 0.. {
        let (Some(owner), Some(name)) = (
            variables.get(format!("o{k}")).and_then(Value::as_str),
            variables.get(format!("n{k}")).and_then(Value::as_str),
        ) else {
            break;
        };
        let alias = format!("r{k}");
        if !query.contains(&format!("{alias}: repository(owner: $o{k}, name: $n{k})")) {
            return Answer::json(
                200,
                json!({"errors": [{"message": format!("variable $o{k} is not used by an alias {alias}")}]}),
            );
        }
        data[alias.as_str()] = match super::rest::visible_by_name(world, installation, owner, name)
        {
            Some(repo) => with_id(world, repo, path, query, &mut entries),
            None => {
                errors.push(json!({
                    "type": "NOT_FOUND",
                    "path": [alias],
                    "locations": [{"line": 20, "column": 3}],
                    "message": format!("Could not resolve to a Repository with the name '{owner}/{name}'."),
                }));
                Value::Null
            }
        };
    }
    if let Some(refused) = refusal(world, entries) {
        return refused;
    }
    let mut body = json!({ "data": data });
    if !errors.is_empty() {
        body["errors"] = Value::Array(errors);
    }
    Answer::json(200, body)
}

fn with_id(world: &World, repo: &Repo, path: &str, query: &str, entries: &mut usize) -> Value {
    let mut value = node(world, repo, path, query, entries);
    value["id"] = json!(node_id(repo));
    value
}

fn truncate(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// GitHub's answer to a query that took too long, when the world refuses
/// answers with more than `refuse_entries_over` tree entries.
fn refusal(world: &World, entries: usize) -> Option<Answer> {
    let over = world.refuse_entries_over?;
    (entries > over).then(|| {
        Answer::json(
            200,
            json!({"data": null, "errors": [{
                "message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `C0DE:1234` when reporting this issue.",
            }]}),
        )
    })
}

/// GitHub's answer to a rate-limited GraphQL query: 200 with an error.
pub fn rate_limited(installation: i64) -> Answer {
    Answer::json(
        200,
        json!({"errors": [{
            "type": "RATE_LIMITED",
            "message": format!("API rate limit exceeded for installation ID {installation}."),
        }]}),
    )
}
