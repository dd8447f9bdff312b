//! The files a platform team deploys Roster with (`Dockerfile`, `app.yml`,
//! `deploy/`) checked against each other and against the code: the settings
//! they set are ones the server reads, the events the App subscribes to are
//! the ones the webhook route acts on, the metrics the alerts use are the
//! ones `/metrics` exports, and the grace period outlasts the shutdown.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use serde_yaml_ng::Value;

use roster::config::ServeArgs;
use roster::controller::{ControllerConfig, ControllerMetrics};
use roster::intake::event::{self, WebhookEvent};
use roster::metrics::Metrics;

/// Events GitHub delivers to every App without a subscription; they cannot
/// be listed in a manifest's `default_events`.
const AUTOMATIC_EVENTS: [&str; 3] = ["installation", "installation_repositories", "ping"];

/// Metrics the alert rules may name before the code exports them.
const PENDING_METRICS: [&str; 1] = ["roster_holds"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every YAML file under `dir`, sorted, found recursively.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries =
            std::fs::read_dir(&current).unwrap_or_else(|e| panic!("{}: {e}", current.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", current.display()))
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every non-empty document of a (possibly multi-document) YAML file.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| {
            Value::deserialize(document).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|value| !value.is_null())
        .collect()
}

fn kubernetes_documents() -> Vec<Value> {
    yaml_files(&root().join("deploy/kubernetes"))
        .iter()
        .flat_map(|path| documents(path))
        .collect()
}

/// The one Kubernetes object of `kind` named `name` in deploy/kubernetes.
fn object(kind: &str, name: &str) -> Value {
    let mut matching: Vec<Value> = kubernetes_documents()
        .into_iter()
        .filter(|d| {
            d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name)
        })
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one {kind} {name} in deploy/kubernetes"
    );
    matching.remove(0)
}

fn deployment() -> Value {
    object("Deployment", "roster")
}

fn pod_spec() -> Value {
    deployment()["spec"]["template"]["spec"].clone()
}

fn container(list: &str, name: &str) -> Value {
    let spec = pod_spec();
    let containers = spec[list]
        .as_sequence()
        .unwrap_or_else(|| panic!("the Deployment has no {list}"));
    containers
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
        .cloned()
        .unwrap_or_else(|| panic!("no {list} entry named {name}"))
}

fn server() -> Value {
    container("containers", "roster")
}

fn migrate_init() -> Value {
    container("initContainers", "migrate")
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_mapping()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The environment variables `roster serve` reads, from its own flags.
fn settings_the_server_reads() -> BTreeSet<String> {
    let command = ServeArgs::augment_args(clap::Command::new("serve"));
    command
        .get_arguments()
        .filter_map(|arg| arg.get_env())
        .map(|env| env.to_string_lossy().into_owned())
        .collect()
}

/// `port` of an `IP:PORT` text.
fn port_of(address: &str) -> u64 {
    address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{address:?} has no port"))
}

fn dockerfile_lines() -> Vec<String> {
    // Joins continuation lines so each instruction is one line.
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in read("Dockerfile").lines() {
        if current.is_empty() && line.trim_start().starts_with('#') {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => current.push_str(start),
            None => {
                current.push_str(line);
                if !current.trim().is_empty() {
                    lines.push(current.trim().to_owned());
                }
                current.clear();
            }
        }
    }
    lines
}

#[test]
fn every_yaml_file_under_deploy_should_parse() {
    let files = yaml_files(&root().join("deploy"));
    assert!(files.len() >= 7, "deploy/ holds {files:?}");
    for file in &files {
        assert!(!documents(file).is_empty(), "{} is empty", file.display());
    }
    for object in kubernetes_documents() {
        if object["kind"].as_str() == Some("Kustomization") {
            continue;
        }
        for field in ["apiVersion", "kind"] {
            assert!(object[field].is_string(), "{field} missing in {object:?}");
        }
        assert!(
            object["metadata"]["name"].is_string(),
            "no name in {object:?}"
        );
    }
}

#[test]
fn the_deployment_should_run_two_replicas_with_health_and_readiness_probes() {
    let deployment = deployment();
    assert_eq!(deployment["spec"]["replicas"].as_u64(), Some(2));
    let server = server();
    assert_eq!(
        server["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/healthz")
    );
    assert_eq!(
        server["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/readyz")
    );
    assert_eq!(strings(&server["args"]), ["serve"]);
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (key, value) in selector.as_mapping().into_iter().flatten() {
        assert_eq!(
            &labels[key], value,
            "the pod template must carry the selector's labels"
        );
    }
}

#[test]
fn an_init_container_should_apply_migrations_with_the_same_image() {
    let init = migrate_init();
    assert!(
        strings(&init["args"]).contains(&"migrate".to_owned()),
        "{init:?}"
    );
    assert_eq!(init["image"], server()["image"]);
    assert_eq!(
        init["env"][0]["valueFrom"]["secretKeyRef"]["key"].as_str(),
        Some("DATABASE_URL")
    );
}

#[test]
fn containers_should_set_resources_and_run_locked_down() {
    let spec = pod_spec();
    assert_eq!(
        spec["securityContext"]["runAsNonRoot"].as_bool(),
        Some(true)
    );
    let dockerfile_user = dockerfile_lines()
        .into_iter()
        .find_map(|l| l.strip_prefix("USER ").map(str::to_owned))
        .unwrap_or_else(|| panic!("the Dockerfile sets no USER"));
    let uid = dockerfile_user
        .split(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        spec["securityContext"]["runAsUser"]
            .as_u64()
            .map(|u| u.to_string()),
        Some(uid),
        "the pod's user is the image's"
    );
    for container in [server(), migrate_init()] {
        let name = container["name"].as_str().unwrap_or_default().to_owned();
        for resource in ["cpu", "memory"] {
            assert!(
                !container["resources"]["requests"][resource].is_null(),
                "{name}: no {resource} request"
            );
        }
        assert!(
            !container["resources"]["limits"]["memory"].is_null(),
            "{name}: no memory limit"
        );
        let security = &container["securityContext"];
        assert_eq!(
            security["readOnlyRootFilesystem"].as_bool(),
            Some(true),
            "{name}"
        );
        assert_eq!(
            security["allowPrivilegeEscalation"].as_bool(),
            Some(false),
            "{name}"
        );
        assert_eq!(
            strings(&security["capabilities"]["drop"]),
            ["ALL"],
            "{name}"
        );
    }
}

#[test]
fn termination_grace_should_outlast_the_pre_stop_pause_and_the_shutdown_deadline() {
    let spec = pod_spec();
    let grace = spec["terminationGracePeriodSeconds"]
        .as_u64()
        .unwrap_or_else(|| panic!("no terminationGracePeriodSeconds"));
    let pre_stop: u64 = strings(&server()["lifecycle"]["preStop"]["exec"]["command"])
        .last()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let shutdown = ControllerConfig::default().shutdown_grace.as_secs();
    assert!(
        grace > pre_stop + shutdown,
        "grace {grace}s must exceed preStop {pre_stop}s + shutdown grace {shutdown}s"
    );
    let deadline = roster::shutdown::STOP_DEADLINE.as_secs();
    assert!(
        grace > pre_stop + deadline,
        "grace {grace}s must exceed preStop {pre_stop}s + shutdown deadline {deadline}s"
    );
}

#[test]
fn secrets_should_come_from_secret_key_refs_that_the_example_secret_defines() {
    let example = documents(&root().join("deploy/kubernetes/secret.example.yaml"));
    assert_eq!(example.len(), 1);
    let secret = &example[0];
    assert_eq!(secret["kind"].as_str(), Some("Secret"));
    let secret_name = secret["metadata"]["name"].as_str().unwrap_or_default();
    let defined = keys(&secret["stringData"]);

    let env = server()["env"].clone();
    let entries = env.as_sequence().cloned().unwrap_or_default();
    let mut from_secret = BTreeSet::new();
    let mut optional = BTreeSet::new();
    for entry in &entries {
        let name = entry["name"].as_str().unwrap_or_default();
        assert!(
            entry["value"].is_null(),
            "{name} must not be written in the manifest"
        );
        let reference = &entry["valueFrom"]["secretKeyRef"];
        assert_eq!(reference["name"].as_str(), Some(secret_name), "{name}");
        let key = reference["key"].as_str().unwrap_or_default();
        if reference["optional"].as_bool() == Some(true) {
            optional.insert(key.to_owned());
        } else {
            assert!(defined.contains(key), "{key} is not in secret.example.yaml");
        }
        from_secret.insert(name.to_owned());
    }
    let expected: BTreeSet<String> = [
        "DATABASE_URL",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "ROSTER_API_TOKEN",
        "ROSTER_SECRET_KEY",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(from_secret, expected);
    // Setup mode is the documented path: the example holds what it needs
    // (the database and the key the stored App is encrypted with), not an
    // App registered by hand.
    let setup_mode: BTreeSet<String> = ["DATABASE_URL", "ROSTER_API_TOKEN", "ROSTER_SECRET_KEY"]
        .map(str::to_owned)
        .into();
    assert_eq!(defined, setup_mode, "the example defines setup mode's keys");
    assert!(
        optional.is_superset(
            &["GITHUB_APP_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]
                .map(str::to_owned)
                .into()
        ),
        "the App's key and webhook secret are optional: {optional:?}"
    );
}

#[test]
fn every_setting_the_manifests_set_should_be_one_the_server_reads() {
    let known = settings_the_server_reads();
    assert!(known.contains("GITHUB_APP_ID") && known.contains("ROSTER_MAX_REMOVALS"));

    let config = object("ConfigMap", "roster-config");
    let server = server();
    assert_eq!(
        server["envFrom"][0]["configMapRef"]["name"].as_str(),
        Some("roster-config")
    );
    let mut set = keys(&config["data"]);
    for entry in server["env"].as_sequence().into_iter().flatten() {
        set.insert(entry["name"].as_str().unwrap_or_default().to_owned());
    }
    let unknown: Vec<&String> = set.difference(&known).collect();
    assert!(
        unknown.is_empty(),
        "settings Roster does not read: {unknown:?}"
    );

    let listen = config["data"]["ROSTER_LISTEN"].as_str().unwrap_or_default();
    let container_port = server["ports"][0]["containerPort"].as_u64();
    assert_eq!(Some(port_of(listen)), container_port);
    let exposed = dockerfile_lines()
        .into_iter()
        .find_map(|l| l.strip_prefix("EXPOSE ").map(str::to_owned));
    assert_eq!(exposed.and_then(|p| p.parse().ok()), container_port);
}

#[test]
fn the_operations_guide_should_document_every_setting() {
    let guide = read("docs/operations.md");
    for setting in settings_the_server_reads() {
        assert!(
            guide.contains(&format!("`{setting}`")),
            "docs/operations.md does not mention {setting}"
        );
    }
}

#[test]
fn the_service_and_the_disruption_budget_should_select_the_pods() {
    let labels = deployment()["spec"]["template"]["metadata"]["labels"].clone();
    let matches_pods = |selector: &Value| {
        selector
            .as_mapping()
            .is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| &labels[k] == v))
    };

    let service = object("Service", "roster");
    assert!(matches_pods(&service["spec"]["selector"]));
    let port = &service["spec"]["ports"][0];
    assert!(port["port"].as_u64().is_some(), "the Service has no port");
    let target = port["targetPort"].as_str().unwrap_or_default();
    let server = server();
    assert!(
        server["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|p| p["name"].as_str() == Some(target)),
        "targetPort {target:?} is not a named port of the container"
    );

    let budget = object("PodDisruptionBudget", "roster");
    assert_eq!(budget["spec"]["minAvailable"].as_u64(), Some(1));
    assert!(matches_pods(&budget["spec"]["selector"]["matchLabels"]));
}

#[test]
fn the_kustomization_should_apply_every_manifest_except_the_example_secret() {
    let kustomization = documents(&root().join("deploy/kubernetes/kustomization.yaml"));
    let listed: BTreeSet<String> = strings(&kustomization[0]["resources"])
        .into_iter()
        .collect();
    let present: BTreeSet<String> = yaml_files(&root().join("deploy/kubernetes"))
        .iter()
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .filter(|n| n != "kustomization.yaml" && n != "secret.example.yaml")
        .collect();
    assert_eq!(listed, present);
}

#[test]
fn the_app_manifest_should_ask_only_for_read_access_to_metadata_and_contents() {
    let manifest = documents(&root().join("app.yml"));
    assert_eq!(manifest.len(), 1);
    let app = &manifest[0];
    let permissions: Vec<(String, String)> = app["default_permissions"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            (
                k.as_str().unwrap_or_default().to_owned(),
                v.as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        permissions,
        [
            ("metadata".to_owned(), "read".to_owned()),
            ("contents".to_owned(), "read".to_owned()),
            ("checks".to_owned(), "write".to_owned()),
            ("pull_requests".to_owned(), "read".to_owned()),
            ("members".to_owned(), "read".to_owned())
        ]
    );
    let hook = app["hook_attributes"]["url"].as_str().unwrap_or_default();
    assert!(hook.starts_with("https://"), "{hook}");
    assert!(hook.ends_with(roster::intake::PATH), "{hook}");
    assert_eq!(app["hook_attributes"]["active"].as_bool(), Some(true));
    for key in ["name", "url", "redirect_url"] {
        assert!(app[key].is_string(), "app.yml has no {key}");
    }
    assert_eq!(app["public"].as_bool(), Some(false));
}

#[test]
fn the_app_manifest_should_subscribe_to_exactly_the_events_the_webhook_route_acts_on() {
    let manifest = documents(&root().join("app.yml"));
    let subscribed: BTreeSet<String> = strings(&manifest[0]["default_events"])
        .into_iter()
        .collect();
    for automatic in AUTOMATIC_EVENTS {
        assert!(
            !subscribed.contains(automatic),
            "{automatic} cannot be subscribed to"
        );
    }

    // An event is acted on when at least one of GitHub's real payloads of
    // it parses into something other than "ignored".
    let fixtures = root().join("tests/fixtures/github/webhooks");
    let mut acted_on = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(&fixtures).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some((event_name, _)) = file.split_once('.') else {
            continue;
        };
        let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        seen.insert(event_name.to_owned());
        let parsed = event::parse(event_name, &body).unwrap_or_else(|e| panic!("{file}: {e}"));
        if !matches!(parsed.event, WebhookEvent::Ignored { .. }) {
            acted_on.insert(event_name.to_owned());
        }
    }
    assert!(
        seen.contains("ping"),
        "fixtures should include an event GitHub sends without subscription"
    );

    let mut expected = subscribed.clone();
    expected.extend(AUTOMATIC_EVENTS.map(str::to_owned));
    assert_eq!(acted_on, expected);
}

#[test]
fn the_contract_should_say_what_every_event_the_app_receives_does() {
    let manifest = documents(&root().join("app.yml"));
    let mut received: BTreeSet<String> = strings(&manifest[0]["default_events"])
        .into_iter()
        .collect();
    received.extend(AUTOMATIC_EVENTS.map(str::to_owned));
    let contract = read("docs/contract.md");
    let table = contract
        .split("What each event does:")
        .nth(1)
        .unwrap_or_else(|| panic!("docs/contract.md: no \"What each event does:\" table"));
    let described: BTreeSet<String> = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        described, received,
        "docs/contract.md's events against app.yml's"
    );
}

fn alert_rules() -> Vec<Value> {
    let rules = documents(&root().join("deploy/prometheus/rules.yaml"));
    assert_eq!(rules.len(), 1);
    let groups = rules[0]["groups"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    assert!(!groups.is_empty(), "rules.yaml has no groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_sequence().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn every_alert_rule_should_have_an_expression_a_duration_a_severity_and_a_summary() {
    let rules = alert_rules();
    assert!(rules.len() >= 6, "{} rules", rules.len());
    let mut names = BTreeSet::new();
    for rule in &rules {
        let name = rule["alert"]
            .as_str()
            .unwrap_or_else(|| panic!("not an alert: {rule:?}"));
        assert!(names.insert(name.to_owned()), "{name} twice");
        assert!(
            rule["expr"].as_str().is_some_and(|e| !e.trim().is_empty()),
            "{name}: expr"
        );
        assert!(rule["for"].is_string(), "{name}: for");
        assert!(
            matches!(
                rule["labels"]["severity"].as_str(),
                Some("warning" | "critical")
            ),
            "{name}: severity"
        );
        assert!(
            rule["annotations"]["summary"].is_string(),
            "{name}: summary"
        );
    }
    for promised in [
        "RosterQueueGrowing",
        "RosterRepositoriesInError",
        "RosterRemovalsHeld",
        "RosterGithubRateLimitLow",
        "RosterWebhooksFailing",
        "RosterReconcileErrors",
    ] {
        assert!(names.contains(promised), "no {promised}");
    }
}

/// Names a Prometheus query may use for what `/metrics` exports: counters
/// with `_total`, histograms with `_count`, `_sum` and `_bucket`.
fn exported_series_names() -> BTreeSet<String> {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let controller = ControllerMetrics::register(registry.sub_registry_with_prefix("roster"));
    // A labelled family shows in the exposition only once it has a series.
    metrics.webhook("push", "queued");
    metrics.github_request(200);
    metrics.rate_limit_remaining(roster::source::InstallationId(1), 5000);
    metrics.set_repo_counts(&Default::default());
    controller.observe("synced", 0.1);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap_or_else(|e| panic!("encoding: {e}"));
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#") || words.next() != Some("TYPE") {
            continue;
        }
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_count", "_sum", "_bucket"],
            _ => &[""],
        };
        for suffix in suffixes {
            names.insert(format!("{}{suffix}", name.trim_end_matches("_total")));
        }
    }
    names
}

#[test]
fn alert_rules_should_only_use_metrics_that_roster_exports() {
    let exported = exported_series_names();
    assert!(exported.contains("roster_queue_adds_total"), "{exported:?}");
    assert!(
        exported.contains("roster_reconcile_duration_seconds_count"),
        "{exported:?}"
    );
    for rule in alert_rules() {
        let name = rule["alert"].as_str().unwrap_or_default().to_owned();
        let expr = rule["expr"].as_str().unwrap_or_default();
        let used = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("roster_"));
        for metric in used {
            assert!(
                exported.contains(metric) || PENDING_METRICS.contains(&metric),
                "{name} uses {metric}, which /metrics does not export"
            );
        }
    }
}

/// Runs `promtool` with `args` in the repository root; `None` when promtool
/// is not installed.
fn promtool(args: &[&str]) -> Option<std::process::Output> {
    match Command::new("promtool")
        .args(args)
        .current_dir(root())
        .output()
    {
        Ok(output) => Some(output),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("promtool: {e}"),
    }
}

#[test]
fn promtool_should_accept_the_rules_and_their_unit_tests() {
    let Some(check) = promtool(&["check", "rules", "deploy/prometheus/rules.yaml"]) else {
        eprintln!("note: promtool is not on PATH; rules not checked by promtool (Debian: apt-get install prometheus)");
        return;
    };
    assert!(
        check.status.success(),
        "promtool check rules:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    if root().join("deploy/prometheus/rules_test.yaml").exists() {
        let Some(test) = promtool(&["test", "rules", "deploy/prometheus/rules_test.yaml"]) else {
            return;
        };
        assert!(
            test.status.success(),
            "promtool test rules:\n{}{}",
            String::from_utf8_lossy(&test.stdout),
            String::from_utf8_lossy(&test.stderr)
        );
    }
}

#[test]
fn the_dockerfile_should_build_a_locked_release_and_run_serve_as_a_non_root_user() {
    let lines = dockerfile_lines();
    let has = |wanted: &str| lines.iter().any(|l| l == wanted);
    assert!(has("FROM rust:1-slim-bookworm AS builder"), "{lines:#?}");
    assert!(has("FROM debian:bookworm-slim"));
    assert!(has(r#"ENTRYPOINT ["/usr/local/bin/roster"]"#));
    assert!(has(r#"CMD ["serve"]"#));
    assert!(has("ENV ROSTER_LISTEN=0.0.0.0:8080"));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("HEALTHCHECK") && l.contains("/healthz")));
    let builds: Vec<&String> = lines.iter().filter(|l| l.contains("cargo build")).collect();
    assert_eq!(builds.len(), 2, "a dependency build and the real one");
    for build in builds {
        assert!(
            build.contains("cargo build --profile dist --locked"),
            "{build}"
        );
    }

    // Everything copied into the builder exists and is not excluded from
    // the build context.
    let ignored: Vec<String> = read(".dockerignore")
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for line in &lines {
        let Some(rest) = line.strip_prefix("COPY ") else {
            continue;
        };
        if rest.starts_with("--from") {
            continue;
        }
        let parts: Vec<&str> = rest.split_whitespace().collect();
        for source in &parts[..parts.len() - 1] {
            assert!(
                root().join(source).exists(),
                "COPY {source}: not in the repository"
            );
            assert!(
                !ignored.iter().any(|i| i == source),
                "COPY {source}: excluded by .dockerignore"
            );
        }
    }
}

#[test]
fn the_public_ingress_should_route_only_the_webhook_and_the_setup_callback_and_the_internal_one_everything(
) {
    let port = object("Service", "roster")["spec"]["ports"][0]["name"].clone();
    let routes = |name: &str| -> Vec<(String, String)> {
        let ingress = object("Ingress", name);
        let rules = ingress["spec"]["rules"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        assert_eq!(rules.len(), 1, "{name}: one host");
        let host = rules[0]["host"].as_str().unwrap_or_default();
        let tls_hosts = strings(&ingress["spec"]["tls"][0]["hosts"]);
        assert_eq!(tls_hosts, [host], "{name}: HTTPS for its host");
        rules[0]["http"]["paths"]
            .as_sequence()
            .into_iter()
            .flatten()
            .map(|p| {
                let backend = &p["backend"]["service"];
                assert_eq!(backend["name"].as_str(), Some("roster"), "{name}");
                assert_eq!(backend["port"]["name"], port, "{name}");
                let path = p["path"].as_str().unwrap_or_default().to_owned();
                let kind = p["pathType"].as_str().unwrap_or_default().to_owned();
                (path, kind)
            })
            .collect()
    };
    assert_eq!(
        routes("roster-public"),
        [
            (roster::intake::PATH.to_owned(), "Exact".to_owned()),
            ("/setup/callback".to_owned(), "Exact".to_owned()),
        ]
    );
    // The public host is the one the App is registered at.
    let public = object("Ingress", "roster-public")["spec"]["rules"][0]["host"].clone();
    let config = object("ConfigMap", "roster-config");
    let url = config["data"]["ROSTER_PUBLIC_URL"]
        .as_str()
        .unwrap_or_else(|| panic!("configmap.yaml sets no ROSTER_PUBLIC_URL"));
    assert_eq!(
        Some(url),
        public.as_str().map(|h| format!("https://{h}")).as_deref()
    );
    assert_eq!(
        routes("roster-internal"),
        [("/".to_owned(), "Prefix".to_owned())]
    );
    let class = |name: &str| object("Ingress", name)["spec"]["ingressClassName"].clone();
    assert_ne!(class("roster-public"), class("roster-internal"));
}

#[test]
fn the_network_policy_should_admit_only_named_namespaces_to_the_pods_port() {
    let labels = deployment()["spec"]["template"]["metadata"]["labels"].clone();
    let policy = object("NetworkPolicy", "roster");
    let selector = policy["spec"]["podSelector"]["matchLabels"]
        .as_mapping()
        .cloned()
        .unwrap_or_default();
    assert!(!selector.is_empty() && selector.iter().all(|(k, v)| &labels[k] == v));
    assert_eq!(strings(&policy["spec"]["policyTypes"]), ["Ingress"]);
    let rules = policy["spec"]["ingress"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rules.len(), 1);
    let sources = rules[0]["from"].as_sequence().cloned().unwrap_or_default();
    assert!(!sources.is_empty(), "an empty from admits everyone");
    for source in &sources {
        let name = &source["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"];
        assert!(
            name.is_string(),
            "every source is a named namespace: {source:?}"
        );
    }
    let ports: Vec<String> = rules[0]["ports"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|p| p["port"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ports, ["http"]);
}

/// The keys of each `kubectl create secret generic roster-secrets` command
/// in `text` (its `--from-literal=KEY=` and `--from-file=KEY=` lines).
fn secret_commands(text: &str) -> Vec<BTreeSet<String>> {
    text.split("kubectl create secret generic roster-secrets")
        .skip(1)
        .map(|command| {
            command
                .lines()
                .take_while(|l| !l.trim().is_empty() && !l.contains("```"))
                .flat_map(|l| l.split_whitespace())
                .filter_map(|word| {
                    let rest = word
                        .strip_prefix("--from-literal=")
                        .or_else(|| word.strip_prefix("--from-file="))?;
                    Some(rest.split('=').next()?.to_owned())
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_documented_secret_command_should_create_the_keys_the_deployment_requires() {
    let required: BTreeSet<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| pod_spec()[*list].as_sequence().cloned().unwrap_or_default())
        .flat_map(|c| c["env"].as_sequence().cloned().unwrap_or_default())
        .map(|e| e["valueFrom"]["secretKeyRef"].clone())
        .filter(|r| r["name"].as_str() == Some("roster-secrets"))
        .filter(|r| r["optional"].as_bool() != Some(true))
        .filter_map(|r| r["key"].as_str().map(str::to_owned))
        .collect();
    assert!(required.contains("ROSTER_SECRET_KEY"), "{required:?}");
    let mut seen = 0;
    for file in [
        "docs/github-app.md",
        "docs/operations.md",
        "README.md",
        "deploy/kubernetes/secret.example.yaml",
    ] {
        let text = read(file).replace("\n#", "\n");
        for keys in secret_commands(&text) {
            seen += 1;
            let missing: Vec<&String> = required.difference(&keys).collect();
            assert!(
                missing.is_empty(),
                "{file}: a Secret made this way lacks {missing:?}: pods would not start"
            );
        }
    }
    assert!(seen >= 2, "the guide and the example show the command");
}

#[test]
fn the_docs_should_state_one_postgresql_version() {
    let pattern = regex::Regex::new(r"PostgreSQL (\d+) or later").expect("regex");
    let mut stated = BTreeSet::new();
    for file in [
        "docs/operations.md",
        "docs/github-app.md",
        "deploy/postgres/create-database.sql",
    ] {
        let text = read(file).split_whitespace().collect::<Vec<_>>().join(" ");
        let found: Vec<String> = pattern
            .captures_iter(&text)
            .filter_map(|c| c.get(1).map(|m| m.as_str().to_owned()))
            .collect();
        assert!(!found.is_empty(), "{file} states no PostgreSQL version");
        stated.extend(found);
    }
    let loose = regex::Regex::new(r"PostgreSQL \((\d+) or later").expect("regex");
    assert!(
        !loose.is_match(&read("docs/operations.md")),
        "docs/operations.md: say \"PostgreSQL N or later\""
    );
    assert_eq!(stated.len(), 1, "{stated:?}");
}

#[test]
fn the_docs_should_name_no_published_image_and_no_release_tag() {
    for file in [
        "README.md",
        "docs/operations.md",
        "docs/github-app.md",
        "docs/checks.md",
    ] {
        let text = read(file);
        for said in ["ghcr.io/", "docker.io/", "git checkout v"] {
            assert!(
                !text.contains(said),
                "{file} says {said:?}: no image is published and no release is tagged"
            );
        }
    }
}

#[test]
fn the_connection_setting_should_be_documented_once_with_the_codes_default() {
    let guide = read("docs/operations.md");
    let row = guide
        .lines()
        .find(|l| l.starts_with("| `ROSTER_DB_MAX_CONNECTIONS` |"))
        .unwrap_or_else(|| panic!("docs/operations.md: no ROSTER_DB_MAX_CONNECTIONS row"));
    let default = row.split('|').nth(3).unwrap_or_default().trim();
    assert_eq!(
        default,
        format!("`{}`", roster::db::DEFAULT_MAX_CONNECTIONS)
    );
    // The row, and one reference from the PostgreSQL section; no count
    // of its own anywhere else.
    assert_eq!(guide.matches("ROSTER_DB_MAX_CONNECTIONS").count(), 2);
    let counted =
        regex::Regex::new(r"(up to|at most) \d+ (PostgreSQL |database )?connections|\d+ connections per replica|\d+ per replica").expect("regex");
    let found: Vec<&str> = counted.find_iter(&guide).map(|m| m.as_str()).collect();
    assert!(
        found.is_empty(),
        "connection counts besides the setting: {found:?}"
    );
}
