//! `POST /graphql`: answers the listing query from the world's state. The
//! query text itself is checked against GitHub's schema elsewhere
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
    if !query.contains("repositoryOwner") {
        return Answer::json(
            200,
            json!({"errors": [{"type": "UNKNOWN", "message": "the fake only answers the listing query"}]}),
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
    let reset_at: chrono::DateTime<chrono::Utc> =
        chrono::DateTime::from_timestamp(i64::try_from(budget.reset).unwrap_or(0), 0)
            .unwrap_or_default();
    let rate_limit = json!({
        "limit": budget.limit,
        "remaining": budget.remaining,
        "resetAt": reset_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
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
    let nodes: Vec<Value> = repos
        .iter()
        .skip(offset)
        .take(PAGE_SIZE)
        .map(|r| node(r, path))
        .collect();
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

fn node(repo: &Repo, path: &str) -> Value {
    let branch = repo.head().map(|commit| {
        let file = match commit.files.get(path) {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes)
                    .ok()
                    .filter(|t| !t.contains('\0'));
                let truncated = bytes.len() > TEXT_CAP;
                json!({"object": {
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
                json!({"object": {}})
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
        "url": format!("https://github.com/{}/{}", repo.owner, repo.name),
        "defaultBranchRef": branch,
    })
}

fn truncate(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
