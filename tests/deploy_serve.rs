//! The Kubernetes files work as shipped: `roster serve` started with exactly
//! the environment `deploy/kubernetes/` gives the server container (the
//! ConfigMap, then each `secretKeyRef` read from `secret.example.yaml`, an
//! optional key left out when the example does not define it) starts in
//! setup mode, the documented path, with no setting error. The test replaces
//! only the placeholders: the database, the secret key, the API token and
//! the address to listen on.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_yaml_ng::Value;

use crate::support::server::{eventually, free_port, Roster};

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
