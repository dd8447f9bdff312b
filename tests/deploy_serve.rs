//! The Kubernetes files work as shipped: `roster serve` started with exactly
//! the environment `deploy/kubernetes/` gives the server container (the
//! ConfigMap, then each `secretKeyRef` read from `secret.example.yaml`, an
//! optional key left out when the example does not define it) starts in
//! setup mode, the documented path, with no setting error. The test replaces
//! only the placeholders: the database, the secret key, the API token and
//! the address to listen on. Two replicas so started on one database
//! finish setup as the docs tell it (docs/github-app.md): either's logged
//! address opens the page on both, the manifest carries the ConfigMap's
//! `ROSTER_PUBLIC_URL` whatever host the page was opened on, and the
//! callback is on the public Ingress.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_yaml_ng::Value;

use axum::http::StatusCode;
use url::Url;

use crate::support::fake_github::FakeGithub;
use crate::support::http::get;
use crate::support::server::{eventually, free_port, Roster};
use crate::support::setup_flow::{self, callback, post_form, state_of, stored_apps};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every non-empty document of the YAML files under `deploy/kubernetes`.
fn documents() -> Vec<Value> {
    let dir = root().join("deploy/kubernetes");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|path| {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_yaml_ng::Deserializer::from_str(&text)
                .map(|d| {
                    Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                })
                .filter(|v| !v.is_null())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn of_kind<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} under deploy/kubernetes"))
}

fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let key = k.as_str().unwrap_or_default().to_owned();
            let value = v
                .as_str()
                .unwrap_or_else(|| panic!("{key}: not a string: {v:?}"))
                .to_owned();
            (key, value)
        })
        .collect()
}

/// The server container's environment as Kubernetes would build it.
fn manifest_environment() -> BTreeMap<String, String> {
    let documents = documents();
    let deployment = of_kind(&documents, "Deployment");
    let secret = of_kind(&documents, "Secret");
    let secret_data = string_map(&secret["stringData"]);
    let config = of_kind(&documents, "ConfigMap");
    let container = deployment["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .and_then(|c| c.iter().find(|c| c["name"].as_str() == Some("roster")))
        .unwrap_or_else(|| panic!("no container named roster"))
        .clone();
    assert_eq!(
        container["args"].as_sequence().map(Vec::len),
        Some(1),
        "the container runs one command"
    );
    assert_eq!(container["args"][0].as_str(), Some("serve"));
    let mut env = string_map(&config["data"]);
    for entry in container["env"].as_sequence().into_iter().flatten() {
        let name = entry["name"].as_str().unwrap_or_default().to_owned();
        let reference = &entry["valueFrom"]["secretKeyRef"];
        let key = reference["key"].as_str().unwrap_or_default();
        match secret_data.get(key) {
            Some(value) => {
                env.insert(name, value.clone());
            }
            None => assert_eq!(
                reference["optional"].as_bool(),
                Some(true),
                "{name}: the key {key} is not in secret.example.yaml and not optional"
            ),
        }
    }
    env
}

/// The manifests' environment with the placeholders a deployment fills in
/// replaced; any other `CHANGE-ME` left is a failure.
fn filled(database_url: &str, port: u16) -> BTreeMap<String, String> {
    let mut env = manifest_environment();
    let replacements = [
        ("DATABASE_URL", database_url.to_owned()),
        ("ROSTER_SECRET_KEY", "ab".repeat(32)),
        ("ROSTER_API_TOKEN", "cd".repeat(32)),
        ("ROSTER_LISTEN", format!("127.0.0.1:{port}")),
    ];
    for (name, value) in replacements {
        assert!(env.contains_key(name), "the manifests do not set {name}");
        env.insert(name.to_owned(), value);
    }
    let left: Vec<&String> = env
        .iter()
        .filter(|(_, v)| v.contains("CHANGE-ME"))
        .map(|(k, _)| k)
        .collect();
    assert!(
        left.is_empty(),
        "placeholders the test does not fill: {left:?}"
    );
    env
}

#[tokio::test]
async fn serve_with_the_kubernetes_environment_should_start_in_setup_mode() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database");
    let port = free_port();
    let env = filled(&url, port);
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let logs = tempfile::tempdir().expect("temp dir");
    // Waits for /healthz, and fails with the log if serve exits (a setting
    // error exits with code 2 and `error: SETTING: …`).
    let roster = Roster::start_on(port, &env, logs.path()).await;
    eventually("the setup mode line", Duration::from_secs(20), || async {
        roster.logs().contains("setup mode").then_some(())
    })
    .await;
    let log = roster.logs();
    assert!(!log.contains("\"level\":\"ERROR\""), "{log}");
    assert!(!log.contains("error:"), "{log}");
    assert!(
        log.lines().any(|l| l.starts_with('{')),
        "the ConfigMap's JSON log format is used: {log}"
    );
}

/// The paths the public Ingress (the one whose class is `public`) routes
/// for `host` to the Service `roster`, with their path types.
fn public_routes(host: &str) -> Vec<(String, String)> {
    let documents = documents();
    let public = documents
        .iter()
        .find(|d| {
            d["kind"].as_str() == Some("Ingress")
                && d["spec"]["ingressClassName"].as_str() == Some("public")
        })
        .unwrap_or_else(|| panic!("no public Ingress under deploy/kubernetes"));
    public["spec"]["rules"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter(|rule| rule["host"].as_str() == Some(host))
        .flat_map(|rule| {
            rule["http"]["paths"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|path| path["backend"]["service"]["name"].as_str() == Some("roster"))
        .map(|path| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (text(&path["path"]), text(&path["pathType"]))
        })
        .collect()
}

/// Whether the public Ingress takes `url` to Roster.
fn publicly_routed(url: &str) -> bool {
    let url = Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let host = url.host_str().unwrap_or_default();
    public_routes(host)
        .iter()
        .any(|(path, kind)| match kind.as_str() {
            "Exact" => url.path() == path,
            "Prefix" => {
                url.path() == path
                    || url
                        .path()
                        .starts_with(&format!("{}/", path.trim_end_matches('/')))
            }
            _ => false,
        })
}

#[tokio::test]
async fn two_replicas_with_the_kubernetes_environment_should_finish_setup_from_either_address() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database");
    let logs = tempfile::tempdir().expect("temp dir");
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let port = free_port();
        let mut env = filled(&url, port);
        // GitHub is the fake one; every other value is the manifests'.
        env.insert("GITHUB_API_URL".into(), fake.api_url().to_string());
        env.insert("GITHUB_GRAPHQL_URL".into(), fake.graphql_url().to_string());
        env.insert("GITHUB_URL".into(), fake.web_url());
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let roster = Roster::start_on(port, &env, logs.path()).await;
        let token = setup_flow::token(&roster).await;
        replicas.push((roster, token));
    }
    let public = manifest_environment()
        .get("ROSTER_PUBLIC_URL")
        .cloned()
        .unwrap_or_else(|| panic!("configmap.yaml sets no ROSTER_PUBLIC_URL"));
    let public = public.trim_end_matches('/').to_owned();
    // The second replica's start left the first one's address working:
    // one token, printed by both, opens the page on both.
    let (first, token) = &replicas[0];
    let (second, second_token) = &replicas[1];
    assert_eq!(token, second_token, "both replicas print one token");
    for (roster, _) in &replicas {
        let page = get(&roster.url(&format!("/setup?token={token}")))
            .await
            .expect("setup page");
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert!(page.body.contains(&public), "{}", page.body);
        assert!(
            roster.logs().contains(&public),
            "the setup line names the public address: {}",
            roster.logs()
        );
    }
    // The page is opened through a port-forward (the replica's own
    // address); the manifest still carries the public address.
    let answer = post_form(
        &first.url("/setup"),
        &[
            ("token", token),
            ("org", "acme"),
            ("public_url", &first.base),
        ],
    )
    .await;
    let (action, manifest) = setup_flow::manifest_form(&answer.body)
        .unwrap_or_else(|| panic!("no manifest form: {}", answer.body));
    let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("manifest");
    let hook = manifest["hook_attributes"]["url"]
        .as_str()
        .unwrap_or_default();
    let redirect = manifest["redirect_url"].as_str().unwrap_or_default();
    assert_eq!(hook, format!("{public}/webhooks/github"));
    assert_eq!(redirect, format!("{public}/setup/callback"));
    // GitHub reaches the webhook, and the browser the callback, on the
    // one public host.
    assert!(publicly_routed(hook), "{hook} is not on the public Ingress");
    assert!(
        publicly_routed(redirect),
        "{redirect} is not on the public Ingress"
    );
    let code = fake.manifest_code(manifest.clone(), "acme");
    // The public Service sends the callback to any replica: the second.
    let done = callback(second, &code, &state_of(&action)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(stored_apps(&pool).await, 1);
    for (roster, _) in &replicas {
        eventually(
            "each replica out of setup mode",
            Duration::from_secs(20),
            || async {
                let answer = get(&roster.url("/setup")).await.ok()?;
                (answer.status == StatusCode::NOT_FOUND).then_some(())
            },
        )
        .await;
    }
}
