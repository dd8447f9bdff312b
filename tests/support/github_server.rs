//! `roster serve` on the GitHub source against the fake GitHub: its
//! settings, signed webhooks to send it, its API to read, and its JSON log
//! lines to parse.

use std::path::Path;
use std::time::Duration;

use axum::http::Method;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::fake_github::{FakeGithub, APP_ID, PRIVATE_KEY};
use super::http::{self, Answer};
use super::server::eventually;

/// The webhook secret of [`FakeGithub::settings`].
pub const WEBHOOK_SECRET: &str = "fake-webhook-secret";

/// Where the project file lives in every test repository.
pub const FILE: &str = "project.yaml";

/// Environment of a `roster serve` on the GitHub source against `fake`,
/// on the database at `database_url`, logging JSON lines. Later entries win,
/// so a test pushes its own overrides.
pub fn github_env(fake: &FakeGithub, database_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", database_url.to_owned()),
        ("GITHUB_APP_ID", APP_ID.to_string()),
        ("GITHUB_APP_PRIVATE_KEY", PRIVATE_KEY.to_owned()),
        ("GITHUB_WEBHOOK_SECRET", WEBHOOK_SECRET.to_owned()),
        ("GITHUB_API_URL", fake.api_url().to_string()),
        ("GITHUB_GRAPHQL_URL", fake.graphql_url().to_string()),
        ("ROSTER_LOG_FORMAT", "json".to_owned()),
    ]
}

/// A valid project file declaring one project.
pub fn project_yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

/// A `push` to the default branch `main` of `owner/name`, as GitHub sends it
/// for an App installed as installation 1.
pub fn push_payload(id: i64, owner: &str, name: &str) -> Vec<u8> {
    let body = json!({
        "ref": "refs/heads/main",
        "deleted": false,
        "repository": {
            "id": id,
            "node_id": format!("R_{id}"),
            "name": name,
            "full_name": format!("{owner}/{name}"),
            "owner": {"login": owner},
            "default_branch": "main",
            "html_url": format!("https://github.com/{owner}/{name}"),
        },
        "installation": {"id": 1},
    });
    body.to_string().into_bytes()
}

/// Sends one delivery signed with `secret`.
pub async fn send_webhook(
    base: &str,
    secret: &str,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
) -> Result<Answer, String> {
    let signature = roster::intake::signature::sign(secret, &body);
    http::send(
        Method::POST,
        &format!("{base}/webhooks/github"),
        &[
            ("content-type", "application/json"),
            ("x-github-event", event),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", &signature),
        ],
        body,
    )
    .await
}

/// Sends a signed push of `acme/name` (id `id`) under a fresh delivery id.
pub async fn push(base: &str, id: i64, name: &str) -> Answer {
    let delivery = format!("push-{:016x}", fastrand::u64(..));
    send_webhook(
        base,
        WEBHOOK_SECRET,
        "push",
        &delivery,
        push_payload(id, "acme", name),
    )
    .await
    .unwrap_or_else(|e| panic!("webhook to {base} failed: {e}"))
}

/// `GET /api/v1/repos/acme/{name}`: `None` until the repository is known.
pub async fn repo(base: &str, name: &str) -> Option<Value> {
    let answer = http::get(&format!("{base}/api/v1/repos/acme/{name}"))
        .await
        .ok()?;
    answer.status.is_success().then(|| answer.json())
}

/// `GET /api/v1/projects/{name}`: `None` while there is no such entry.
pub async fn project(base: &str, name: &str) -> Option<Value> {
    let answer = http::get(&format!("{base}/api/v1/projects/{name}"))
        .await
        .ok()?;
    answer.status.is_success().then(|| answer.json())
}

/// Waits until `acme/name` is `synced` at `sha`; its JSON.
pub async fn wait_synced(base: &str, name: &str, sha: &str, limit: Duration) -> Value {
    eventually(&format!("acme/{name} synced at {sha}"), limit, || async {
        repo(base, name)
            .await
            .filter(|r| r["status"] == "synced" && r["synced_sha"] == sha)
    })
    .await
}

/// Every JSON object line of a log file (other lines are skipped).
pub fn json_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .collect()
}

/// When a log line was written.
pub fn timestamp(line: &Value) -> Option<DateTime<Utc>> {
    let text = line["timestamp"].as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// One piece of work a log line reports: what, from when to when.
#[derive(Debug, Clone)]
pub struct Span {
    /// The `key` field (a repository id), or empty for a listing.
    pub key: String,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// Which process wrote it (the index of its log among those read).
    pub process: usize,
    pub line: Value,
}

/// Lines with `message` among `messages`, as spans: the line's time is the
/// end, minus its `duration_ms` the start. The start is never earlier than
/// the work really began (the duration is rounded down and measured before
/// the line is written), and the end never later than the work ended.
pub fn spans(logs: &[&Path], messages: &[&str]) -> Vec<Span> {
    let mut spans = Vec::new();
    for (process, log) in logs.iter().enumerate() {
        for line in json_lines(log) {
            let message = line["message"].as_str().unwrap_or_default();
            if !messages.contains(&message) {
                continue;
            }
            let (Some(end), Some(ms)) = (timestamp(&line), line["duration_ms"].as_u64()) else {
                panic!("a {message:?} line without time or duration: {line}");
            };
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            spans.push(Span {
                key: line["key"].as_str().unwrap_or_default().to_owned(),
                start: end - chrono::Duration::milliseconds(ms),
                end,
                process,
                line,
            });
        }
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// Reconciles reported by the processes whose logs are given, successful
/// or failed.
pub fn reconciles(logs: &[&Path]) -> Vec<Span> {
    spans(logs, &["reconciled", "reconcile failed"])
}
