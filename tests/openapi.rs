//! `GET /api/v1/openapi.json` (docs/contract.md#http-routes) kept true: it
//! names every `/api/v1` route that `src/web/router.rs` declares, and a
//! real answer of each route, on a registry holding the example
//! organisation, validates against the schema the document gives for it.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::intake::deliveries::{record, NewDelivery};
use roster::registry::changes::ChangeWaker;
use roster::web::api_changes::ChangesState;
use roster::web::long_polls::LongPolls;
use serde_json::Value;

use crate::support;
use support::example_org;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};

const TOKEN: &str = "t0ken-for-tests";

/// Every `/api/v1` route `router.rs` declares, as `METHOD path`.
fn router_routes() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web/router.rs");
    let source = std::fs::read_to_string(path).expect("router.rs");
    let path = regex::Regex::new(r#"^\s*"(/api/v1/[^"]*)""#).expect("regex");
    let method = regex::Regex::new(r"\b(get|post|put|patch|delete)\(").expect("regex");
    let mut routes = BTreeSet::new();
    for call in source.split(".route(").skip(1) {
        // The call's arguments: up to the parenthesis that closes it.
        let mut depth = 1;
        let end = call
            .char_indices()
            .find_map(|(i, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                (depth == 0).then_some(i)
            })
            .unwrap_or(call.len());
        let arguments = &call[..end];
        let Some(found) = path.captures(arguments) else {
            continue;
        };
        for verb in method.captures_iter(arguments) {
            routes.insert(format!("{} {}", verb[1].to_uppercase(), &found[1]));
        }
    }
    routes
}

/// Every route the document describes, as `METHOD path`.
fn documented_routes(document: &Value) -> BTreeSet<String> {
    let mut routes = BTreeSet::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
            routes.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    routes
}

async fn fixture() -> Fixture {
    let options = Options {
        api_token: Some(TOKEN),
        github_web_url: None,
    };
    router::fixture(options, |_, _| {}).await
}

async fn request(app: &Router, method: &str, uri: &str) -> Answer {
    let request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("method"))
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("request");
    send(app, request).await
}

async fn the_document(app: &Router) -> Value {
    let answer = request(app, "GET", "/api/v1/openapi.json").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer
        .header(header::CONTENT_TYPE)
        .starts_with("application/json"));
    answer.json()
}

#[test]
fn the_routes_should_be_read_from_the_router() {
    let routes = router_routes();
    // The reading itself is checked: a route of each shape is found.
    for route in [
        "GET /api/v1/projects",
        "GET /api/v1/repos/{owner}/{name}",
        "POST /api/v1/holds/{id}/release",
        "GET /api/v1/changes",
    ] {
        assert!(
            routes.contains(route),
            "{route} not read from router.rs: {routes:?}"
        );
    }
}

#[tokio::test]
async fn every_api_route_of_the_router_should_be_in_the_document_and_no_other() {
    let f = fixture().await;
    let document = the_document(&f.app).await;
    assert_eq!(document["openapi"].as_str().map(|v| &v[..3]), Some("3.1"));
    let routes = router_routes();
    let documented = documented_routes(&document);
    let missing: Vec<_> = routes.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routes).collect();
    assert!(
        missing.is_empty(),
        "routes missing from the document: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "documented routes the router lacks: {extra:?}"
    );
    // Generators name a client's methods after them: each must be unique.
    let ids: Vec<&str> = document["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(|item| item.as_object())
        .flat_map(|item| item.values())
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), documented.len(), "an operation without an id");
    assert_eq!(unique.len(), ids.len(), "operation ids repeat: {ids:?}");
}

/// The document compiled, each answer's schema found by its JSON pointer.
struct Validator {
    compiler: boon::Compiler,
    schemas: boon::Schemas,
}

const DOCUMENT_URL: &str = "https://roster.invalid/openapi.json";

impl Validator {
    fn new(document: &Value) -> Self {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler
            .add_resource(DOCUMENT_URL, document.clone())
            .expect("the document as a resource");
        Self {
            compiler,
            schemas: boon::Schemas::new(),
        }
    }

    /// Why `body` does not match the schema of `path`'s `method` answering
    /// `status`.
    fn refusal(
        &mut self,
        method: &str,
        path: &str,
        status: StatusCode,
        body: &Value,
    ) -> Option<String> {
        let escape = |s: &str| s.replace('~', "~0").replace('/', "~1");
        let pointer = format!(
            "#/paths/{}/{}/responses/{}/content/application~1json/schema",
            escape(path),
            method.to_lowercase(),
            status.as_u16()
        );
        let index = match self
            .compiler
            .compile(&format!("{DOCUMENT_URL}{pointer}"), &mut self.schemas)
        {
            Ok(index) => index,
            Err(e) => return Some(format!("no schema at {pointer}: {e:#}")),
        };
        self.schemas
            .validate(body, index)
            .err()
            .map(|e| format!("{e:#}"))
    }
}

/// A concrete request for a documented route, on the example organisation.
fn concrete(path: &str) -> String {
    path.replace("/repos/{owner}/{name}", "/repos/local/checkout-service")
        .replace("/projects/{name}", "/projects/checkout-api")
        .replace("{id}", "1")
}

#[tokio::test]
async fn a_real_answer_of_each_route_should_validate_against_its_schema() {
    let f = fixture().await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let delivery = NewDelivery {
        id: "d-1",
        event: "push",
        action: None,
        repo: Some("local/checkout-service"),
        outcome: "queued",
    };
    record(&f.pool, &delivery).await.expect("record delivery");
    let (_stop, stop_rx) = roster::shutdown::channel();
    let feed = roster::web::router::changes(ChangesState {
        pool: f.pool.clone(),
        waker: ChangeWaker::start(f.pool.clone()),
        stop: stop_rx,
        long_polls: LongPolls::default(),
        access: None,
    });

    let document = the_document(&f.app).await;
    let mut validator = Validator::new(&document);
    let mut checked = Vec::new();
    for route in documented_routes(&document) {
        let (method, path) = route.split_once(' ').expect("METHOD path");
        let app = if path == "/api/v1/changes" {
            &feed
        } else {
            &f.app
        };
        let mut uri = concrete(path);
        if path.ends_with("/owners") {
            // The teams of teams.yaml, not an empty page.
            uri.push_str("?limit=5");
        }
        let answer = request(app, method, &uri).await;
        assert!(
            answer.status.is_success() || answer.status == StatusCode::NOT_FOUND,
            "{route}: {} {}",
            answer.status,
            answer.body
        );
        if !answer
            .header(header::CONTENT_TYPE)
            .starts_with("application/json")
        {
            assert_eq!(
                path, "/api/v1/backstage/entities.yaml",
                "{route} is not JSON"
            );
            continue;
        }
        let body = answer.json();
        if let Some(why) = validator.refusal(method, path, answer.status, &body) {
            panic!("{route} answered {}:\n{body:#}\n{why}", answer.status);
        }
        checked.push((route, answer.status));
    }
    // Every route but the YAML one was checked, most with a 2xx.
    assert_eq!(checked.len(), documented_routes(&document).len() - 1);
    let successes = checked.iter().filter(|(_, s)| s.is_success()).count();
    assert!(successes >= checked.len() - 1, "{checked:?}");
}

#[tokio::test]
async fn an_answer_that_breaks_its_schema_should_be_refused() {
    let f = fixture().await;
    let document = the_document(&f.app).await;
    let mut validator = Validator::new(&document);
    let wrong = serde_json::json!({"items": [{"name": 3}], "next_cursor": null});
    let why = validator.refusal("GET", "/api/v1/projects", StatusCode::OK, &wrong);
    assert!(why.is_some(), "a wrong entry passed");
    let right = serde_json::json!({"items": [], "next_cursor": null});
    assert_eq!(
        validator.refusal("GET", "/api/v1/projects", StatusCode::OK, &right),
        None
    );
}

/// A query parameter's schema, by route and name.
fn parameter<'a>(document: &'a Value, path: &str, name: &str) -> &'a Value {
    document["paths"][path]["get"]["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .map(|p| &p["schema"])
        .unwrap_or_else(|| panic!("{path} has no parameter {name}"))
}

#[tokio::test]
async fn the_document_should_type_numbers_name_sets_and_declare_every_refusal() {
    let f = fixture().await;
    let document = the_document(&f.app).await;
    for (path, name, minimum, maximum) in [
        ("/api/v1/projects", "limit", 1, Some(1000)),
        ("/api/v1/graph", "depth", 1, Some(3)),
        ("/api/v1/changes", "wait", 0, Some(60)),
        ("/api/v1/changes", "after", 0, None),
    ] {
        let schema = parameter(&document, path, name);
        assert_eq!(schema["type"], "integer", "{path} {name}: {schema}");
        assert_eq!(schema["minimum"], minimum, "{path} {name}: {schema}");
        if let Some(maximum) = maximum {
            assert_eq!(schema["maximum"], maximum, "{path} {name}: {schema}");
        }
    }
    let statuses = parameter(&document, "/api/v1/repos", "status")["enum"].clone();
    assert_eq!(statuses.as_array().map(Vec::len), Some(7), "{statuses}");
    let dangling = parameter(&document, "/api/v1/owners", "status")["enum"].clone();
    assert_eq!(
        dangling,
        serde_json::json!(["unknown", "renamed", "deleted"])
    );
    // Free text carries the rule every route applies to it.
    let q = parameter(&document, "/api/v1/projects", "q");
    assert_eq!(q["maxLength"], 1024, "{q}");
    assert!(
        q["pattern"].as_str().is_some_and(|p| p.contains("\\u0000")),
        "{q}"
    );

    let operation = |method: &str, path: &str| document["paths"][path][method].clone();
    let statuses_of = |op: &Value| -> BTreeSet<String> {
        op["responses"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(s, _)| s.clone())
            .collect()
    };
    // Reads that show more with the token declare it as optional.
    for path in ["/api/v1/projects", "/api/v1/owners", "/api/v1/changes"] {
        let op = operation("get", path);
        assert_eq!(
            op["security"],
            serde_json::json!([{}, {"token": []}]),
            "{path}"
        );
        for status in ["400", "401", "429", "503"] {
            assert!(statuses_of(&op).contains(status), "{path} lacks {status}");
        }
    }
    let op = operation("get", "/api/v1/deliveries");
    assert_eq!(op["security"], serde_json::json!([{}]));
    for path in ["/api/v1/resync", "/api/v1/holds/{id}/release"] {
        let op = operation("post", path);
        for status in ["400", "401", "403", "413", "429", "503"] {
            assert!(statuses_of(&op).contains(status), "{path} lacks {status}");
        }
    }
    // An empty page of either kind matches exactly one branch of oneOf.
    let mut validator = Validator::new(&document);
    for empty in [
        serde_json::json!({"accounts": [], "items": [], "next_cursor": null}),
        serde_json::json!({"items": [], "next_cursor": null}),
    ] {
        let why = validator.refusal("GET", "/api/v1/owners", StatusCode::OK, &empty);
        assert_eq!(why, None, "{empty}");
    }
}
