//! The HTTP side (docs/contract.md#http-routes, docs/operations.md#metrics) against a real PostgreSQL: the read API's
//! shapes, filters and pagination, the write API's auth and effect, probes,
//! `/metrics`, security headers and the dashboard's escaping.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::controller::{ControllerMetrics, ListingSchedule, WorkQueue};
use roster::intake::deliveries::{record, NewDelivery};
use roster::project::{Fields, Project, ProjectName};
use roster::source::RepoId;
use serde_json::{json, Value};
use sqlx::PgPool;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};
use support::seed::{event, link, Seed};

const TOKEN: &str = "t0ken-for-tests";

/// The router on a fresh database, with the write API on (`TOKEN`) or off.
async fn fixture_with(api_token: Option<&'static str>) -> Fixture {
    let options = Options {
        api_token,
        github_web_url: Some("https://github.com"),
    };
    router::fixture(options, |registry, metrics| {
        // As the server wires them: the controller's names under `roster_`.
        let controller = ControllerMetrics::register(registry.sub_registry_with_prefix("roster"));
        // Labelled families only show once they hold a series.
        controller.observe("synced", 0.1);
        metrics.webhook("push", "queued");
        metrics.github_request(200);
        metrics.rate_limit_remaining(roster::source::InstallationId(7), 4999);
    })
    .await
}

async fn fixture() -> Fixture {
    fixture_with(Some(TOKEN)).await
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

async fn post(app: &Router, uri: &str, authorization: Option<&str>) -> Answer {
    let mut request = Request::builder().method(Method::POST).uri(uri);
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    send(app, request.body(Body::empty()).expect("request")).await
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i[key].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

const REPO_KEYS: [&str; 10] = [
    "id",
    "full_name",
    "status",
    "synced_sha",
    "last_synced_at",
    "error",
    "attempts",
    "projects",
    "warnings",
    "hold",
];

/// An entry's keys: its name, every field of the table, where it came from.
fn entry_keys() -> BTreeSet<&'static str> {
    let fields = roster::project::fields::FIELDS.iter().map(|f| f.name);
    let source = [
        "repo",
        "repo_id",
        "path",
        "source_sha",
        "created_at",
        "updated_at",
    ];
    std::iter::once("name")
        .chain(fields)
        .chain(source)
        .collect()
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

const API_FILE: &str = "projects:
  - name: checkout-api
    owner: team-payments
    description: Takes payments
    lifecycle: production
    tags: [payments, grpc]
    links:
      - title: Runbook
        url: https://runbooks.example.com/x
    labels:
      tier: \"1\"
  - name: checkout-worker
    owner: team-payments
    description: Background jobs
    lifecycle: production
    tags: [payments]
    links:
      - title: Runbook
        url: https://runbooks.example.com/x
    labels:
      tier: \"1\"
";

const WEB_FILE: &str = "name: web-front
owner: team-web
description: The shop front
lifecycle: production
tags: [web]
links:
  - title: Runbook
    url: https://runbooks.example.com/x
labels:
  tier: \"1\"
";

/// acme/api (synced, 2 entries), acme/web (invalid, its entry kept from an
/// earlier sync), local/tool (error).
async fn seed(pool: &PgPool) {
    let seed = Seed::new(pool);
    seed.repo(1, "acme", "api")
        .await
        .synced(SHA, API_FILE)
        .await
        .timeline(&[
            event("synced", "applied 2 entries", Duration::ZERO),
            event("synced", "nothing changed", Duration::ZERO),
        ])
        .await;
    seed.repo(2, "acme", "web")
        .await
        .synced(SHA, WEB_FILE)
        .await
        .invalid("project.yaml:4:8: owner: must not be empty\nproject.yaml:5:1: tags: too many")
        .await;
    seed.repo(3, "local", "tool")
        .await
        .failed("GitHub answered 502")
        .await;
}

#[tokio::test]
async fn repos_list_should_answer_the_spec_shape() {
    let f = fixture().await;
    seed(&f.pool).await;

    let answer = get(&f.app, "/api/v1/repos").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap_or("")
        .starts_with("application/json"));
    let list = answer.json();
    assert_eq!(keys(&list), BTreeSet::from(["items", "next_cursor"]));
    assert_eq!(list["next_cursor"], Value::Null);
    assert_eq!(
        names(&list, "full_name"),
        ["acme/api", "acme/web", "local/tool"]
    );
    let api = &list["items"][0];
    assert_eq!(keys(api), BTreeSet::from(REPO_KEYS));
    assert_eq!(api["id"], 1);
    assert_eq!(api["status"], "synced");
    assert_eq!(
        api["synced_sha"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert!(api["last_synced_at"].is_string());
    assert_eq!(api["error"], Value::Null);
    assert_eq!(api["attempts"], 0);
    assert_eq!(api["projects"], json!(["checkout-api", "checkout-worker"]));
    assert_eq!(api["hold"], Value::Null);
}

#[tokio::test]
async fn repos_list_should_filter_by_status_and_name() {
    let f = fixture().await;
    seed(&f.pool).await;

    let invalid = get(&f.app, "/api/v1/repos?status=invalid").await.json();
    assert_eq!(names(&invalid, "full_name"), ["acme/web"]);
    let by_name = get(&f.app, "/api/v1/repos?q=ACME%2F").await.json();
    assert_eq!(names(&by_name, "full_name"), ["acme/api", "acme/web"]);
    let both = get(&f.app, "/api/v1/repos?status=error&q=acme")
        .await
        .json();
    assert_eq!(names(&both, "full_name"), Vec::<String>::new());
    let empty_params = get(&f.app, "/api/v1/repos?status=&q=").await.json();
    assert_eq!(names(&empty_params, "full_name").len(), 3);
}

#[tokio::test]
async fn repos_list_should_page_with_next_cursor() {
    let f = fixture().await;
    seed(&f.pool).await;

    let first = get(&f.app, "/api/v1/repos?limit=2").await.json();
    assert_eq!(names(&first, "full_name"), ["acme/api", "acme/web"]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next cursor")
        .to_owned();
    let second = get(&f.app, &format!("/api/v1/repos?limit=2&cursor={cursor}"))
        .await
        .json();
    assert_eq!(names(&second, "full_name"), ["local/tool"]);
    assert_eq!(second["next_cursor"], Value::Null);
}

#[tokio::test]
async fn repos_list_should_refuse_bad_parameters_with_json_400s() {
    let f = fixture().await;

    let status = get(&f.app, "/api/v1/repos?status=x").await;
    assert_eq!(status.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        status.json(),
        json!({"error": "status: unknown value \"x\" (expected one of pending, synced, no_file, invalid, conflict, error, removed)"})
    );
    for uri in [
        "/api/v1/repos?limit=0",
        "/api/v1/repos?limit=1001",
        "/api/v1/repos?limit=many",
        "/api/v1/repos?cursor=not-a-cursor",
        "/api/v1/repos?status=synced&status=error",
        "/api/v1/projects?limit=0",
        "/api/v1/projects?cursor=%21%21",
        "/api/v1/deliveries?limit=5000",
        "/api/v1/deliveries?cursor=bogus",
    ] {
        let answer = get(&f.app, uri).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{uri}: {}",
            answer.body
        );
        let error = answer.json();
        assert_eq!(keys(&error), BTreeSet::from(["error"]), "{uri}");
        assert!(
            error["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{uri}"
        );
    }
    let limit = get(&f.app, "/api/v1/repos?limit=0").await.json();
    assert!(
        limit["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("limit: ")),
        "{limit}"
    );
    let cursor = get(&f.app, "/api/v1/repos?cursor=not-a-cursor")
        .await
        .json();
    assert!(
        cursor["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("cursor: ")),
        "{cursor}"
    );
}

#[tokio::test]
async fn repos_list_should_show_only_the_first_line_of_an_error_and_the_detail_all_of_it() {
    let f = fixture().await;
    seed(&f.pool).await;

    let list = get(&f.app, "/api/v1/repos?q=acme/web").await.json();
    assert_eq!(
        list["items"][0]["error"],
        "project.yaml:4:8: owner: must not be empty"
    );
    let detail = get(&f.app, "/api/v1/repos/acme/web").await.json();
    assert_eq!(
        detail["error"],
        "project.yaml:4:8: owner: must not be empty\nproject.yaml:5:1: tags: too many"
    );
    let none = get(&f.app, "/api/v1/repos?q=acme/api").await.json();
    assert_eq!(none["items"][0]["error"], Value::Null);
}

#[tokio::test]
async fn repo_detail_should_add_entries_and_newest_events_first() {
    let f = fixture().await;
    seed(&f.pool).await;

    let answer = get(&f.app, "/api/v1/repos/acme/api").await;
    assert_eq!(answer.status, StatusCode::OK);
    let repo = answer.json();
    let mut expected: BTreeSet<&str> = BTreeSet::from(REPO_KEYS);
    expected.extend(["events", "entries", "entries_next_cursor", "checks"]);
    assert_eq!(keys(&repo), expected);
    assert_eq!(repo["full_name"], "acme/api");
    let events = repo["events"].as_array().expect("events");
    assert_eq!(events.len(), 2);
    assert_eq!(
        keys(&events[0]),
        BTreeSet::from(["at", "count", "kind", "message"])
    );
    assert_eq!(events[0]["message"], "nothing changed");
    assert_eq!(events[0]["count"], 1);
    assert_eq!(events[1]["message"], "applied 2 entries");
    assert_eq!(keys(&repo["entries"][0]), entry_keys());

    let same = get(&f.app, "/api/v1/repos/ACME/Api").await;
    assert_eq!(
        same.status,
        StatusCode::OK,
        "names are case-insensitive, as on GitHub"
    );
}

#[tokio::test]
async fn unknown_repository_should_be_a_json_404() {
    let f = fixture().await;

    let answer = get(&f.app, "/api/v1/repos/local/x").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer.json(),
        json!({"error": "repository local/x not found"})
    );

    let page = get(&f.app, "/repos/local/x").await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.body.contains("repository local/x not found"));

    let route = get(&f.app, "/api/v1/nothing-here").await;
    assert_eq!(route.status, StatusCode::NOT_FOUND);
    assert_eq!(keys(&route.json()), BTreeSet::from(["error"]));
}

#[tokio::test]
async fn projects_should_list_filter_and_page_the_registry() {
    let f = fixture().await;
    seed(&f.pool).await;

    let all = get(&f.app, "/api/v1/projects").await.json();
    assert_eq!(keys(&all), BTreeSet::from(["items", "next_cursor"]));
    assert_eq!(
        names(&all, "name"),
        ["checkout-api", "checkout-worker", "web-front"]
    );
    let entry = &all["items"][0];
    assert_eq!(keys(entry), entry_keys());
    assert_eq!(entry["repo"], "acme/api");
    assert_eq!(entry["repo_id"], 1);
    assert_eq!(entry["path"], "project.yaml");
    assert_eq!(entry["tags"], json!(["payments", "grpc"]));
    assert_eq!(entry["labels"], json!({"tier": "1"}));
    assert_eq!(
        entry["links"][0],
        json!({"title": "Runbook", "url": "https://runbooks.example.com/x"})
    );

    let owner = get(&f.app, "/api/v1/projects?owner=team-web").await.json();
    assert_eq!(names(&owner, "name"), ["web-front"]);
    let tag = get(&f.app, "/api/v1/projects?tag=grpc").await.json();
    assert_eq!(names(&tag, "name"), ["checkout-api"]);
    let q = get(&f.app, "/api/v1/projects?q=background").await.json();
    assert_eq!(names(&q, "name"), ["checkout-worker"]);

    let first = get(&f.app, "/api/v1/projects?limit=2").await.json();
    assert_eq!(names(&first, "name"), ["checkout-api", "checkout-worker"]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next cursor")
        .to_owned();
    let second = get(&f.app, &format!("/api/v1/projects?limit=2&cursor={cursor}"))
        .await
        .json();
    assert_eq!(names(&second, "name"), ["web-front"]);
    assert_eq!(second["next_cursor"], Value::Null);
}

#[tokio::test]
async fn project_detail_should_answer_one_entry_or_404() {
    let f = fixture().await;
    seed(&f.pool).await;

    let answer = get(&f.app, "/api/v1/projects/web-front").await;
    assert_eq!(answer.status, StatusCode::OK);
    let entry = answer.json();
    // The entry's keys, and its relations (docs/contract.md#relations).
    let mut expected = entry_keys();
    expected.extend(["dependents", "dependents_count", "depends_on_status"]);
    assert_eq!(keys(&entry), expected);
    assert_eq!(entry["repo"], "acme/web");

    let missing = get(&f.app, "/api/v1/projects/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json(), json!({"error": "project nope not found"}));
}

#[tokio::test]
async fn deliveries_should_list_newest_first_with_the_spec_keys() {
    let f = fixture().await;
    for (id, repo) in [
        ("d-1", Some("acme/api")),
        ("d-2", None),
        ("d-3", Some("acme/api")),
    ] {
        let delivery = NewDelivery {
            id,
            event: "push",
            action: None,
            repo,
            outcome: "queued",
        };
        record(&f.pool, &delivery).await.expect("record delivery");
    }

    let list = get(&f.app, "/api/v1/deliveries").await.json();
    assert_eq!(keys(&list), BTreeSet::from(["items", "next_cursor"]));
    assert_eq!(names(&list, "id"), ["d-3", "d-2", "d-1"]);
    assert_eq!(
        keys(&list["items"][0]),
        BTreeSet::from([
            "id",
            "event",
            "action",
            "repo",
            "outcome",
            "at",
            "redelivery_requested"
        ])
    );
    let first = get(&f.app, "/api/v1/deliveries?limit=2").await.json();
    assert_eq!(names(&first, "id"), ["d-3", "d-2"]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next cursor")
        .to_owned();
    let second = get(
        &f.app,
        &format!("/api/v1/deliveries?limit=2&cursor={cursor}"),
    )
    .await
    .json();
    assert_eq!(names(&second, "id"), ["d-1"]);

    let page = get(&f.app, "/deliveries").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("d-3"));
}

#[tokio::test]
async fn write_api_should_refuse_a_missing_or_wrong_token_with_401() {
    let f = fixture().await;
    seed(&f.pool).await;

    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("Bearer t0ken-for-test"),
        Some("Basic dDA="),
    ] {
        for uri in ["/api/v1/resync", "/api/v1/repos/acme/api/resync"] {
            let answer = post(&f.app, uri, authorization).await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{uri} {authorization:?}"
            );
            assert_eq!(answer.headers[header::WWW_AUTHENTICATE], "Bearer");
            assert_eq!(keys(&answer.json()), BTreeSet::from(["error"]));
        }
    }
    assert_eq!(f.queue.depth().await.expect("depth"), 0, "nothing enqueued");
}

#[tokio::test]
async fn write_api_should_answer_403_when_no_token_is_configured() {
    let f = fixture_with(None).await;
    seed(&f.pool).await;

    for uri in ["/api/v1/resync", "/api/v1/repos/acme/api/resync"] {
        let answer = post(&f.app, uri, Some("Bearer anything")).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(keys(&answer.json()), BTreeSet::from(["error"]));
    }
    assert_eq!(f.queue.depth().await.expect("depth"), 0);
}

#[tokio::test]
async fn repo_resync_should_enqueue_the_repository_and_answer_202() {
    let f = fixture().await;
    seed(&f.pool).await;
    let bearer = format!("Bearer {TOKEN}");

    let answer = post(&f.app, "/api/v1/repos/acme/web/resync", Some(&bearer)).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
    assert_eq!(answer.json(), json!({"repo_id": 2, "status": "queued"}));
    assert!(f.queue.status(&RepoId(2)).await.expect("status").is_some());
    assert_eq!(f.queue.depth().await.expect("depth"), 1);

    let unknown = post(&f.app, "/api/v1/repos/local/x/resync", Some(&bearer)).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(
        unknown.json(),
        json!({"error": "repository local/x not found"})
    );
    assert_eq!(f.queue.depth().await.expect("depth"), 1);
}

#[tokio::test]
async fn resync_should_schedule_a_listing_and_answer_202() {
    let f = fixture().await;
    let hour = Duration::from_secs(3600);
    // The first listing is always due; take it so only a request makes one due.
    assert!(f.queue.take_listing(hour).await.expect("take"));
    assert!(!f.queue.take_listing(hour).await.expect("take"));

    let answer = post(&f.app, "/api/v1/resync", Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert_eq!(answer.json(), json!({"status": "scheduled"}));
    assert!(
        f.queue.take_listing(hour).await.expect("take"),
        "a listing is due at once"
    );
}

#[tokio::test]
async fn write_routes_should_refuse_large_bodies() {
    let f = fixture().await;
    let request = Request::post("/api/v1/resync")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_LENGTH, 100 * 1024)
        .body(Body::from(vec![b'x'; 100 * 1024]))
        .expect("request");
    let answer = send(&f.app, request).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn probes_should_follow_the_database() {
    let f = fixture().await;

    assert_eq!(get(&f.app, "/healthz").await.status, StatusCode::OK);
    assert_eq!(get(&f.app, "/readyz").await.status, StatusCode::OK);

    f.pool.close().await;
    assert_eq!(get(&f.app, "/healthz").await.status, StatusCode::OK);
    let ready = get(&f.app, "/readyz").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    let list = get(&f.app, "/api/v1/repos").await;
    assert_eq!(list.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(keys(&list.json()), BTreeSet::from(["error"]));
}

#[tokio::test]
async fn metrics_should_expose_every_spec_name() {
    let f = fixture().await;
    seed(&f.pool).await;

    let answer = get(&f.app, "/metrics").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/plain; version=0.0.4")));
    for name in [
        "roster_queue_depth",
        "roster_queue_adds_total",
        "roster_queue_retries_total",
        "roster_reconcile_duration_seconds",
        "roster_webhooks_total",
        "roster_github_requests_total",
        "roster_github_rate_limit_remaining",
        "roster_repos",
    ] {
        assert!(
            answer.body.contains(&format!("# TYPE {name}"))
                || answer.body.contains(&format!("\n{name}")),
            "{name} missing:\n{}",
            answer.body
        );
    }
    assert!(
        answer.body.contains("roster_repos{status=\"synced\"} 1"),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains("roster_repos{status=\"removed\"} 0"),
        "{}",
        answer.body
    );
}

/// The router with every metric registered as the server does, and no
/// series observed: what a scraper reads before any work.
async fn fixture_before_any_work() -> Fixture {
    let options = Options {
        api_token: Some(TOKEN),
        github_web_url: Some("https://github.com"),
    };
    router::fixture(options, |registry, _metrics| {
        ControllerMetrics::register(registry.sub_registry_with_prefix("roster"));
    })
    .await
}

async fn get_accepting(app: &Router, uri: &str, accept: &str) -> Answer {
    let request = Request::get(uri).header(header::ACCEPT, accept);
    send(app, request.body(Body::empty()).expect("request")).await
}

#[tokio::test]
async fn metrics_should_answer_openmetrics_only_to_a_scraper_that_asks_for_it() {
    let f = fixture().await;
    let plain = get_accepting(&f.app, "/metrics", "*/*").await;
    assert_eq!(
        plain.headers[header::CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert!(
        plain.body.contains("# HELP roster_queue_adds_total ")
            && plain
                .body
                .contains("# TYPE roster_queue_adds_total counter\n")
            && !plain.body.contains("# EOF"),
        "{}",
        plain.body
    );
    let open = get_accepting(
        &f.app,
        "/metrics",
        "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3",
    )
    .await;
    assert!(open.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("application/openmetrics-text")));
    assert!(
        open.body.contains("# TYPE roster_queue_adds counter\n") && open.body.ends_with("# EOF\n"),
        "{}",
        open.body
    );
}

#[tokio::test]
async fn metrics_should_declare_every_documented_family_before_any_work() {
    let f = fixture_before_any_work().await;
    let answer = get(&f.app, "/metrics").await;
    for (name, kind) in [
        ("roster_queue_depth", "gauge"),
        ("roster_queue_adds_total", "counter"),
        ("roster_queue_retries_total", "counter"),
        ("roster_reconcile_duration_seconds", "histogram"),
        ("roster_webhooks_total", "counter"),
        ("roster_github_requests_total", "counter"),
        ("roster_github_rate_limit_remaining", "gauge"),
        ("roster_repos", "gauge"),
        ("roster_holds", "gauge"),
        ("roster_build_info", "gauge"),
    ] {
        let help = format!("# HELP {name} ");
        let declared = format!("# TYPE {name} {kind}\n");
        let (Some(help_at), Some(type_at)) = (answer.body.find(&help), answer.body.find(&declared))
        else {
            panic!("{name} is not declared:\n{}", answer.body);
        };
        // Declared before any of its samples.
        let first_sample = answer.body.find(&format!("\n{name}")).unwrap_or(usize::MAX);
        assert!(
            help_at < first_sample && type_at < first_sample,
            "{name}:\n{}",
            answer.body
        );
    }
    let build = format!(
        "roster_build_info{{version=\"{}\",revision=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        roster::metrics::revision()
    );
    assert!(answer.body.contains(&build), "{build}:\n{}", answer.body);
}

/// What `promtool check metrics` says of `exposition`: `None` when
/// promtool is not installed (scripts/test installs it).
fn promtool_complaints(exposition: &str) -> Option<String> {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take().expect("promtool's stdin");
    stdin
        .write_all(exposition.as_bytes())
        .expect("write to promtool");
    drop(stdin);
    let output = child.wait_with_output().expect("promtool ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(if output.status.success() && said.trim().is_empty() {
        String::new()
    } else {
        format!("{}: {said}", output.status)
    })
}

#[tokio::test]
async fn metrics_should_pass_promtool_before_any_work_and_after_some() {
    let before = fixture_before_any_work().await;
    let fresh = get(&before.app, "/metrics").await;
    let Some(complaints) = promtool_complaints(&fresh.body) else {
        eprintln!("note: promtool is not installed (scripts/test installs Debian's `prometheus`); skipping the promtool check");
        return;
    };
    assert_eq!(complaints, "", "before any work:\n{}", fresh.body);
    // After some work: a series in every labelled family, and repositories.
    let after = fixture().await;
    seed(&after.pool).await;
    let worked = get(&after.app, "/metrics").await;
    assert!(
        worked.body.contains("roster_webhooks_total{"),
        "{}",
        worked.body
    );
    assert_eq!(
        promtool_complaints(&worked.body).unwrap_or_default(),
        "",
        "after some work:\n{}",
        worked.body
    );
}

#[tokio::test]
async fn every_answer_should_carry_the_security_headers() {
    let f = fixture().await;
    seed(&f.pool).await;

    for uri in [
        "/",
        "/api/v1/repos",
        "/api/v1/repos/local/x",
        "/healthz",
        "/static/roster.css",
        "/nowhere",
    ] {
        let answer = get(&f.app, uri).await;
        assert_eq!(answer.headers["x-content-type-options"], "nosniff", "{uri}");
        assert_eq!(answer.headers["referrer-policy"], "same-origin", "{uri}");
        let csp = answer.headers["content-security-policy"]
            .to_str()
            .unwrap_or("");
        assert!(
            csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{uri}"
        );
    }
    let css = get(&f.app, "/static/roster.css").await;
    assert!(css.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/css")));
}

#[tokio::test]
async fn dashboard_should_show_counts_filters_and_next_page() {
    let f = fixture().await;
    seed(&f.pool).await;

    let page = get(&f.app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.headers[header::CONTENT_TYPE]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/html")));
    assert!(
        page.body.contains("href=\"/?status=invalid\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("synced: 1"));
    assert!(page.body.contains("href=\"/repos/acme/api\""));
    assert!(page.body.contains(
        "<a href=\"/projects/checkout-api\">checkout-api</a>, \
         <a href=\"/projects/checkout-worker\">checkout-worker</a>"
    ));
    assert!(page.body.contains(">0123456<"), "short sha");
    assert!(page
        .body
        .contains("project.yaml:4:8: owner: must not be empty"));
    assert!(
        !page.body.contains("tags: too many"),
        "only the first error line in the table"
    );

    let filtered = get(&f.app, "/?status=error").await;
    assert!(filtered.body.contains("local/tool"));
    assert!(!filtered.body.contains("acme/api<"));

    let paged = get(&f.app, "/?limit=1&q=acme").await;
    assert!(paged.body.contains("acme/api"));
    assert!(!paged.body.contains("acme/web<"));
    assert!(paged.body.contains("rel=\"next\""));
    assert!(paged.body.contains("q=acme&#38;cursor="));

    for uri in ["/?status=x", "/?status=a&status=b", "/?limit=0"] {
        let bad = get(&f.app, uri).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(
            bad.headers[header::CONTENT_TYPE]
                .to_str()
                .is_ok_and(|t| t.starts_with("text/html")),
            "{uri}"
        );
    }

    let detail = get(&f.app, "/repos/acme/web").await;
    assert_eq!(detail.status, StatusCode::OK);
    assert!(detail.body.contains(
        "<pre>project.yaml:4:8: owner: must not be empty\nproject.yaml:5:1: tags: too many</pre>"
    ));
    assert!(detail.body.contains("href=\"https://github.com/acme/web\""));

    let projects = get(&f.app, "/projects?tag=web").await;
    assert_eq!(projects.status, StatusCode::OK);
    assert!(projects.body.contains("web-front"));
    assert!(!projects.body.contains("checkout-api"));
}

#[tokio::test]
async fn dashboard_should_escape_repository_data() {
    let f = fixture().await;
    // Entries the file's rules refuse (a `javascript:` link), as an older
    // server or a hand edit could have left them.
    let evil = Project {
        name: ProjectName::parse("evil").expect("a name"),
        fields: Fields {
            owner: "<b>team</b>".to_owned(),
            description: Some("<script>alert(3)</script>".to_owned()),
            lifecycle: Some("production".to_owned()),
            tags: Vec::new(),
            links: vec![
                link("Runbook", "https://runbooks.example.com/x"),
                link("Trap", "javascript:alert(1)"),
            ],
            labels: BTreeMap::from([("tier".to_owned(), "1".to_owned())]),
            ..Fields::default()
        },
    };
    Seed::new(&f.pool)
        .repo(9, "local", "<script>alert(1)</script>")
        .await
        .unchecked_entries("abc1234", &[evil])
        .await
        .invalid("<img src=x onerror=alert(2)>")
        .await;

    let overview = get(&f.app, "/").await;
    assert_eq!(overview.status, StatusCode::OK);
    assert!(!overview.body.contains("<script>"), "{}", overview.body);
    assert!(!overview.body.contains("<img"));
    assert!(overview
        .body
        .contains("&#60;script&#62;alert(1)&#60;/script&#62;"));

    let detail = get(&f.app, "/repos/local/%3Cscript%3Ealert(1)%3C%2Fscript%3E").await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.body);
    assert!(!detail.body.contains("<script>"));
    assert!(!detail.body.contains("<b>team"));
    assert!(detail
        .body
        .contains("&#60;script&#62;alert(3)&#60;/script&#62;"));
    assert!(detail
        .body
        .contains("href=\"https://runbooks.example.com/x\""));
    assert!(
        !detail.body.contains("href=\"javascript:"),
        "only http(s) links"
    );

    let projects = get(&f.app, "/projects").await;
    assert!(!projects.body.contains("<script>"));
}
