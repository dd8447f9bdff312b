//! The organisations' teams and members, and what GitHub answers about
//! them: the GraphQL reads (`organization(login:) { teams }` and
//! `{ membersWithRole }`, 100 a page, cursors that stay valid while teams
//! change; teams by node id, `nodes(ids:)`), a `FORBIDDEN` error when the App lacks `members: read`, and the
//! `team`, `membership` and `organization` webhook payloads in GitHub's
//! shapes (from the fixtures).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::rest::Answer;
use super::world::{Budget, World};

/// Teams or members per page, as the queries ask (`first: 100`).
pub const PAGE_SIZE: usize = 100;

const TEAM_CREATED: &str = include_str!("../../fixtures/github/webhooks/team.created.json");
const MEMBERSHIP_ADDED: &str = include_str!("../../fixtures/github/webhooks/membership.added.json");
const ORGANIZATION_RENAMED: &str =
    include_str!("../../fixtures/github/webhooks/organization.renamed.json");
const MEMBER_ADDED: &str =
    include_str!("../../fixtures/github/webhooks/organization.member_added.with-installation.json");

#[derive(Debug, Clone)]
pub struct Team {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub parent: Option<i64>,
    pub secret: bool,
}

/// One organisation's directory (per installation).
#[derive(Debug, Clone, Default)]
pub struct OrgDirectory {
    pub teams: BTreeMap<i64, Team>,
    /// Member id → login.
    pub members: BTreeMap<i64, String>,
    /// The App lacks `members: read`: reads answer `FORBIDDEN`.
    pub forbidden: bool,
    /// Only the member list answers `FORBIDDEN` (the teams are read).
    pub members_forbidden: bool,
}

/// Whether `query` is one of the directory reads (a whole read's page, or
/// teams by node id).
pub fn is_directory(query: &str) -> bool {
    query.contains("organization(login:") || query.contains("query DirectoryTeam(")
}

/// A team's GraphQL node id, as payloads carry it and `nodes(ids:)` takes it.
pub fn team_node_id(id: i64) -> String {
    format!("T_{id}")
}

/// `nodes(ids:)` of teams: each the team as it is now, or `null` with a
/// `NOT_FOUND` error when the installation's organisation has no such team.
fn team_nodes(world: &World, installation: i64, request: &Value, rate_limit: Value) -> Answer {
    let ids: Vec<&str> = request
        .pointer("/variables/ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let directory = world.directories.get(&installation);
    let mut errors = Vec::new();
    let nodes: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, node_id)| {
            let team = node_id
                .strip_prefix("T_")
                .and_then(|id| id.parse::<i64>().ok())
                .and_then(|id| directory?.teams.get(&id));
            match team {
                Some(t) => json!({
                    "databaseId": t.id,
                    "slug": t.slug,
                    "name": t.name,
                    "privacy": if t.secret { "SECRET" } else { "VISIBLE" },
                    "parentTeam": t.parent.map(|p| json!({"databaseId": p})),
                    "organization": {"databaseId": org_id(installation)},
                }),
                None => {
                    errors.push(json!({"type": "NOT_FOUND", "path": ["nodes", i],
                        "message": format!("Could not resolve to a node with the global id of '{node_id}'")}));
                    Value::Null
                }
            }
        })
        .collect();
    let mut body = json!({"data": {"rateLimit": rate_limit, "nodes": nodes}});
    if !errors.is_empty() {
        body["errors"] = json!(errors);
    }
    Answer::json(200, body)
}

/// GitHub's id of an installation's account (as `GET /app/installations` says).
pub fn org_id(installation: i64) -> i64 {
    installation * 10
}

/// The 1-based page a directory read asks for.
pub fn page_of(request: &Value) -> usize {
    offset_of(request.pointer("/variables/after")) / PAGE_SIZE + 1
}

fn offset_of(after: Option<&Value>) -> usize {
    after
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix("cursor:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

pub fn answer(world: &World, installation: i64, request: &Value, budget: Budget) -> Answer {
    let query = request
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let login = request
        .pointer("/variables/login")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rate_limit = json!({
        "limit": budget.limit,
        "remaining": budget.remaining,
        "resetAt": chrono::DateTime::from_timestamp(budget.reset as i64, 0)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default(),
        "cost": 1,
    });
    if query.contains("query DirectoryTeam(") {
        return team_nodes(world, installation, request, rate_limit);
    }
    let account = world
        .installations
        .get(&installation)
        .filter(|i| i.login.eq_ignore_ascii_case(login) && !i.personal);
    let Some(account) = account else {
        return Answer::json(
            200,
            json!({
                "data": {"rateLimit": rate_limit, "organization": null},
                "errors": [{"type": "NOT_FOUND", "path": ["organization"],
                            "message": format!("Could not resolve to an Organization with the login of '{login}'.")}],
            }),
        );
    };
    let directory = world
        .directories
        .get(&installation)
        .cloned()
        .unwrap_or_default();
    let members = query.contains("membersWithRole");
    let field = if members { "membersWithRole" } else { "teams" };
    if directory.forbidden || (members && directory.members_forbidden) {
        return Answer::json(
            200,
            json!({
                "data": {"rateLimit": rate_limit, "organization": {"databaseId": org_id(account.id), field: null}},
                "errors": [{"type": "FORBIDDEN", "path": ["organization", field],
                            "message": "Resource not accessible by integration"}],
            }),
        );
    }
    let offset = offset_of(request.pointer("/variables/after"));
    let nodes: Vec<Value> = if members {
        directory
            .members
            .iter()
            .skip(offset)
            .take(PAGE_SIZE)
            .map(|(id, login)| json!({"databaseId": id, "login": login}))
            .collect()
    } else {
        directory
            .teams
            .values()
            .skip(offset)
            .take(PAGE_SIZE)
            .map(|t| {
                json!({
                    "databaseId": t.id,
                    "slug": t.slug,
                    "name": t.name,
                    "privacy": if t.secret { "SECRET" } else { "VISIBLE" },
                    "parentTeam": t.parent.map(|p| json!({"databaseId": p})),
                })
            })
            .collect()
    };
    let total = if members {
        directory.members.len()
    } else {
        directory.teams.len()
    };
    let end = offset + nodes.len();
    Answer::json(
        200,
        json!({"data": {
            "rateLimit": rate_limit,
            "organization": {
                "databaseId": org_id(account.id),
                field: {
                    "pageInfo": {
                        "hasNextPage": end < total,
                        "endCursor": if nodes.is_empty() { Value::Null } else { json!(format!("cursor:{end}")) },
                    },
                    "nodes": nodes,
                },
            },
        }}),
    )
}

/// The payload's `organization` and `installation`, pointed at `installation`.
fn retarget(payload: &mut Value, installation: i64, login: &str) {
    payload["organization"]["login"] = json!(login);
    payload["organization"]["id"] = json!(org_id(installation));
    payload["installation"] = json!({ "id": installation });
}

/// `team` `action` (`created`, `deleted`, `edited`) about `team` as it is
/// in the payload; `renamed_from` fills `changes.name.from`.
pub fn team_event(
    installation: i64,
    login: &str,
    action: &str,
    team: &Team,
    renamed_from: Option<&str>,
) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(TEAM_CREATED).unwrap_or(Value::Null);
    retarget(&mut payload, installation, login);
    payload["action"] = json!(action);
    payload["team"]["id"] = json!(team.id);
    payload["team"]["node_id"] = json!(team_node_id(team.id));
    payload["team"]["slug"] = json!(team.slug);
    payload["team"]["name"] = json!(team.name);
    payload["team"]["privacy"] = json!(if team.secret { "secret" } else { "closed" });
    payload["changes"] = match renamed_from {
        Some(from) => json!({ "name": { "from": from } }),
        None => json!({}),
    };
    payload.to_string().into_bytes()
}

/// `membership` `action` (`added`, `removed`) of `member` in `team`.
pub fn membership_event(
    installation: i64,
    login: &str,
    action: &str,
    team: &Team,
    member: (i64, &str),
) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(MEMBERSHIP_ADDED).unwrap_or(Value::Null);
    retarget(&mut payload, installation, login);
    payload["action"] = json!(action);
    payload["team"]["id"] = json!(team.id);
    payload["team"]["slug"] = json!(team.slug);
    payload["member"]["id"] = json!(member.0);
    payload["member"]["login"] = json!(member.1);
    payload.to_string().into_bytes()
}

/// `organization` `member_added` / `member_removed` of `member`.
pub fn member_event(installation: i64, login: &str, action: &str, member: (i64, &str)) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(MEMBER_ADDED).unwrap_or(Value::Null);
    retarget(&mut payload, installation, login);
    payload["action"] = json!(action);
    payload["membership"]["user"]["id"] = json!(member.0);
    payload["membership"]["user"]["login"] = json!(member.1);
    payload["membership"]["state"] = json!("active");
    payload.to_string().into_bytes()
}

/// `organization` `renamed` from `from` to `login`.
pub fn renamed_event(installation: i64, login: &str, from: &str) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(ORGANIZATION_RENAMED).unwrap_or(Value::Null);
    retarget(&mut payload, installation, login);
    payload["changes"] = json!({ "login": { "from": from } });
    payload.to_string().into_bytes()
}
