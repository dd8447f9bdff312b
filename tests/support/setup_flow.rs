//! Drives `roster serve` in setup mode against the fake GitHub: its
//! environment, the setup address from its log, the form posts, and what
//! the database holds afterwards.

use std::time::Duration;

use axum::http::Method;
use sqlx::PgPool;

use super::fake_github::FakeGithub;
use super::http::{send, Answer};
use super::server::{eventually, free_port, Roster};

/// The key tests seal the stored App with.
pub const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// Another key: what a replica with the wrong key holds.
pub const OTHER_KEY: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

/// `roster serve` with no App, pointed at `fake`, storing into `database`,
/// reachable at its own address as `ROSTER_PUBLIC_URL`.
pub fn env(fake: &FakeGithub, database: &str, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", database.to_owned()),
        ("ROSTER_SECRET_KEY", KEY.to_owned()),
        ("GITHUB_API_URL", fake.api_url().to_string()),
        ("GITHUB_GRAPHQL_URL", fake.graphql_url().to_string()),
        ("GITHUB_URL", fake.web_url()),
        ("ROSTER_PUBLIC_URL", format!("http://127.0.0.1:{port}")),
        ("ROSTER_API_TOKEN", super::github_app::API_TOKEN.to_owned()),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_owned()),
    ]
}

/// Starts Roster in setup mode; its address and the token it logged.
pub async fn start(fake: &FakeGithub, database: &str, logs: &std::path::Path) -> (Roster, String) {
    let port = free_port();
    let roster = Roster::start_on(port, &env(fake, database, port), logs).await;
    let token = token(&roster).await;
    (roster, token)
}

/// Starts Roster in setup mode without `ROSTER_PUBLIC_URL`: the setup
/// page asks for the address. Its address and the token it logged.
pub async fn start_typed(
    fake: &FakeGithub,
    database: &str,
    logs: &std::path::Path,
) -> (Roster, String) {
    let port = free_port();
    let env: Vec<(&'static str, String)> = env(fake, database, port)
        .into_iter()
        .filter(|(k, _)| *k != "ROSTER_PUBLIC_URL")
        .collect();
    let roster = Roster::start_on(port, &env, logs).await;
    let token = token(&roster).await;
    (roster, token)
}

/// The token of the setup address in the log (waits for the line).
pub async fn token(roster: &Roster) -> String {
    let pattern = regex::Regex::new(r"/setup\?token=([0-9a-f]{64})").expect("regex");
    eventually(
        "the setup address in the log",
        Duration::from_secs(20),
        || {
            let logs = roster.logs();
            let found = pattern
                .captures(&logs)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_owned());
            async move { found }
        },
    )
    .await
}

/// Sends a form (`application/x-www-form-urlencoded`).
pub async fn post_form(url: &str, fields: &[(&str, &str)]) -> Answer {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    send(
        Method::POST,
        url,
        &[("content-type", "application/x-www-form-urlencoded")],
        body.into_bytes(),
    )
    .await
    .unwrap_or_else(|e| panic!("POST {url} failed: {e}"))
}

/// `POST /setup`; the page's form target and the manifest it carries.
pub async fn submit(roster: &Roster, token: &str, org: &str) -> (Answer, Option<(String, String)>) {
    let public = roster.base.clone();
    let answer = post_form(
        &roster.url("/setup"),
        &[("token", token), ("org", org), ("public_url", &public)],
    )
    .await;
    let form = manifest_form(&answer.body);
    (answer, form)
}

/// The manifest form of a page: its action and its `manifest` value.
pub fn manifest_form(html: &str) -> Option<(String, String)> {
    let action = regex::Regex::new(r#"<form method="post" action="([^"]+)"[^>]*id="manifest""#)
        .expect("regex")
        .captures(html)?
        .get(1)?
        .as_str();
    let manifest = regex::Regex::new(r#"name="manifest" value="([^"]*)""#)
        .expect("regex")
        .captures(html)?
        .get(1)?
        .as_str();
    Some((unescape(action), unescape(manifest)))
}

/// Undoes HTML escaping of an attribute value.
pub fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The token a manifest page hands on in place of the one its request
/// used up (its "start over" link, `/setup?token=NEXT`).
pub fn next_token(html: &str) -> Option<String> {
    let href = regex::Regex::new(r#"<a href="/setup\?token=([0-9a-f]+)" id="start-over""#)
        .expect("regex")
        .captures(html)?
        .get(1)?
        .as_str();
    Some(href.to_owned())
}

/// The `state` of a form target (`…?state=STATE`).
pub fn state_of(action: &str) -> String {
    url::Url::parse(action)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or_default()
}

/// GET `/setup/callback` with `code` and `state`.
pub async fn callback(roster: &Roster, code: &str, state: &str) -> Answer {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("code", code)
        .append_pair("state", state)
        .finish();
    send(
        Method::GET,
        &roster.url(&format!("/setup/callback?{query}")),
        &[],
        Vec::new(),
    )
    .await
    .unwrap_or_else(|e| panic!("callback failed: {e}"))
}

/// How many Apps the database holds (0 or 1).
pub async fn stored_apps(pool: &PgPool) -> i64 {
    let stored = roster::setup::store::app_exists(pool)
        .await
        .expect("look for a stored App");
    i64::from(stored)
}
