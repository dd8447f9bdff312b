//! Drives the real `roster serve` as a GitHub App against the fake GitHub:
//! the environment that points it there, and signed webhook deliveries
//! built from GitHub's own example payloads with the fake's ids and names.

use axum::http::Method;
use serde_json::{json, Value};

use super::http::{send, Answer};

/// The secret the server checks webhook signatures with.
pub const WEBHOOK_SECRET: &str = "e2e-webhook-secret";

/// The bearer token of the write API.
pub const API_TOKEN: &str = "e2e-api-token";

/// What GitHub's push example looks like (`tests/fixtures/github/webhooks`).
const PUSH: &str = include_str!("../fixtures/github/webhooks/push.default-branch-created.json");
const RENAMED: &str = include_str!("../fixtures/github/webhooks/repository.renamed.json");
const INSTALLED: &str = include_str!("../fixtures/github/webhooks/installation.created.json");

/// A repository as the fake GitHub holds it, as webhooks name it.
#[derive(Debug, Clone)]
pub struct Repo {
    pub id: i64,
    pub installation: i64,
    pub owner: String,
    pub name: String,
}

impl Repo {
    pub fn new(id: i64, installation: i64, owner: &str, name: &str) -> Self {
        Self {
            id,
            installation,
            owner: owner.to_owned(),
            name: name.to_owned(),
        }
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// `roster serve`'s environment for an App whose GitHub is at `api_url`
/// (REST) and `graphql_url`, storing into `database_url`. Listings run at
/// start and then only when asked (`POST /api/v1/resync`).
pub fn server_env(
    app_id: u64,
    private_key: &str,
    api_url: &str,
    graphql_url: &str,
    database_url: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", database_url.to_owned()),
        ("GITHUB_APP_ID", app_id.to_string()),
        ("GITHUB_APP_PRIVATE_KEY", private_key.to_owned()),
        ("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
        ("GITHUB_API_URL", api_url.to_owned()),
        ("GITHUB_GRAPHQL_URL", graphql_url.to_owned()),
        ("ROSTER_API_TOKEN", API_TOKEN.to_owned()),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_owned()),
    ]
}

/// Points the payload's `repository` and `installation` at `repo`.
fn retarget(payload: &mut Value, repo: &Repo) {
    let full_name = repo.full_name();
    let html_url = format!("https://github.com/{full_name}");
    if let Some(r) = payload.get_mut("repository") {
        r["id"] = json!(repo.id);
        r["node_id"] = json!(format!("R_{}", repo.id));
        r["name"] = json!(repo.name);
        r["full_name"] = json!(full_name);
        r["owner"]["login"] = json!(repo.owner);
        r["owner"]["name"] = json!(repo.owner);
        r["default_branch"] = json!("main");
        r["master_branch"] = json!("main");
        r["html_url"] = json!(html_url);
        r["url"] = json!(html_url);
        r["archived"] = json!(false);
    }
    payload["installation"] = json!({ "id": repo.installation });
    if let Some(org) = payload.get_mut("organization") {
        org["login"] = json!(repo.owner);
    }
}

/// A push of `after` to the default branch (`main`) of `repo`.
pub fn push(repo: &Repo, before: &str, after: &str) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(PUSH).unwrap_or(Value::Null);
    retarget(&mut payload, repo);
    payload["ref"] = json!("refs/heads/main");
    payload["before"] = json!(before);
    payload["after"] = json!(after);
    payload["created"] = json!(false);
    payload["deleted"] = json!(false);
    payload["compare"] = json!(format!(
        "https://github.com/{}/compare/{before}...{after}",
        repo.full_name()
    ));
    if let Some(head) = payload.get_mut("head_commit") {
        head["id"] = json!(after);
    }
    payload.to_string().into_bytes()
}

/// A push from `before` to `after` of `repo`'s default branch whose
/// commits are listed as GitHub lists them: each `(id, modified paths)`, the
/// last one's id being `after`'s when the push is well formed.
pub fn push_of_commits(
    repo: &Repo,
    before: &str,
    after: &str,
    commits: &[(&str, &[&str])],
) -> Vec<u8> {
    let mut payload: Value =
        serde_json::from_slice(&push(repo, before, after)).unwrap_or(Value::Null);
    payload["commits"] = commits
        .iter()
        .map(|(id, modified)| {
            json!({
                "id": id, "distinct": true, "message": "a change",
                "added": [], "modified": modified, "removed": [],
            })
        })
        .collect();
    payload.to_string().into_bytes()
}

/// `repository` `renamed`: `repo` carries the new name.
pub fn renamed(repo: &Repo, from: &str) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(RENAMED).unwrap_or(Value::Null);
    retarget(&mut payload, repo);
    payload["action"] = json!("renamed");
    payload["changes"] = json!({ "repository": { "name": { "from": from } } });
    payload.to_string().into_bytes()
}

/// `installation` `created`: the App was installed on `account` as
/// `installation` just now, with access to `repos` (listed as GitHub lists
/// them: id, node id, name and full name only).
pub fn installation_created(installation: i64, account: &str, repos: &[Repo]) -> Vec<u8> {
    let mut payload: Value = serde_json::from_str(INSTALLED).unwrap_or(Value::Null);
    payload["action"] = json!("created");
    payload["installation"]["id"] = json!(installation);
    payload["installation"]["account"]["login"] = json!(account);
    // Installed now: no listing that started before can have found it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    payload["installation"]["created_at"] = json!(now);
    payload["repositories"] = repos
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "node_id": format!("R_{}", r.id),
                "name": r.name,
                "full_name": r.full_name(),
                "private": true,
            })
        })
        .collect();
    payload.to_string().into_bytes()
}

/// Sends `body` as GitHub would: signed, with an event name and a fresh
/// delivery id.
pub async fn deliver(base: &str, event: &str, body: Vec<u8>) -> Answer {
    let signature = roster::intake::sign(WEBHOOK_SECRET, &body);
    let delivery = format!("{:032x}", fastrand::u128(..));
    let headers = [
        ("content-type", "application/json"),
        ("x-github-event", event),
        ("x-github-delivery", delivery.as_str()),
        ("x-hub-signature-256", signature.as_str()),
    ];
    send(
        Method::POST,
        &format!("{base}/webhooks/github"),
        &headers,
        body,
    )
    .await
    .unwrap_or_else(|e| panic!("webhook delivery failed: {e}"))
}

/// `POST /api/v1/resync` with the token: an org-wide listing now.
pub async fn resync(base: &str) -> Answer {
    let auth = format!("Bearer {API_TOKEN}");
    send(
        Method::POST,
        &format!("{base}/api/v1/resync"),
        &[("authorization", auth.as_str())],
        Vec::new(),
    )
    .await
    .unwrap_or_else(|e| panic!("resync request failed: {e}"))
}
