//! Bad text in a query or a path (docs/contract.md#lists-and-pages): a NUL
//! or another control character, bytes that are not UTF-8, an over-long
//! value. Each answers 400 naming the parameter (JSON from the API, a page
//! from the dashboard), never a 5xx, logs no `ERROR` line, and leaves the
//! registry as it was.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use serde_json::Value;

use crate::support;
use support::example_org;
use support::http::Answer;
use support::router::{self, send, Options};

/// Each route that takes text from a client, as a template where `{}`
/// stands for the bad value, with the parameter that should be named.
const ROUTES: [(&str, &str); 14] = [
    ("/api/v1/projects?q={}", "q"),
    ("/api/v1/projects?owner={}", "owner"),
    ("/api/v1/projects?tag={}", "tag"),
    ("/api/v1/repos?q={}", "q"),
    ("/api/v1/deliveries?repo={}", "repo"),
    ("/api/v1/projects/{}", "name"),
    ("/api/v1/projects/{}/history", "name"),
    ("/api/v1/repos/local/{}", "name"),
    ("/api/v1/repos/{}/checkout-service", "owner"),
    ("/?q={}", "q"),
    ("/projects?q={}", "q"),
    ("/changes?owner={}", "owner"),
    ("/repos/local/{}", "name"),
    ("/projects/{}", "name"),
];

/// Bad values, percent-encoded as a client sends them.
fn bad_values() -> Vec<(&'static str, String)> {
    vec![
        ("a NUL", "a%00b".to_owned()),
        ("a control character", "a%01b".to_owned()),
        ("DEL", "a%7Fb".to_owned()),
        ("a C1 control character", "a%C2%85b".to_owned()),
        ("bytes that are not UTF-8", "a%FFb".to_owned()),
        ("an over-long value", "x".repeat(5_000)),
    ]
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

/// What the registry holds, as the API lists it.
async fn registry_seen(app: &Router) -> (Value, Value) {
    let projects = get(app, "/api/v1/projects?limit=1000").await;
    let repos = get(app, "/api/v1/repos?limit=1000").await;
    assert_eq!(projects.status, StatusCode::OK, "{}", projects.body);
    assert_eq!(repos.status, StatusCode::OK, "{}", repos.body);
    (projects.json(), repos.json())
}

#[tokio::test]
async fn bad_text_in_a_query_or_path_should_answer_400_naming_the_parameter() {
    let options = Options {
        api_token: None,
        github_web_url: None,
    };
    let f = router::fixture(options, |_, _| {}).await;
    example_org::load(&f.pool, f.queue.clone()).await;
    let before = registry_seen(&f.app).await;
    assert!(
        before.0["items"].as_array().is_some_and(|i| !i.is_empty()),
        "the example organisation is registered"
    );

    let mut wrong = Vec::new();
    for (template, parameter) in ROUTES {
        for (what, value) in bad_values() {
            let uri = template.replace("{}", &value);
            let answer = get(&f.app, &uri).await;
            let shown = format!("{template} with {what}");
            if answer.status != StatusCode::BAD_REQUEST {
                wrong.push(format!("{shown}: {} {:.200}", answer.status, answer.body));
                continue;
            }
            if template.starts_with("/api/") {
                let body = answer.json();
                let error = body["error"].as_str().unwrap_or_default();
                if !error.starts_with(&format!("{parameter}: ")) {
                    wrong.push(format!(
                        "{shown}: the error {error:?} names not {parameter}"
                    ));
                }
            } else {
                let page = &answer.body;
                let html = answer.header(header::CONTENT_TYPE).starts_with("text/html");
                if !html || !page.contains(&format!("{parameter}: ")) {
                    wrong.push(format!(
                        "{shown}: not a page naming {parameter}: {page:.300}"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(registry_seen(&f.app).await, before, "the registry changed");
}

#[tokio::test]
async fn good_text_should_still_be_read() {
    let options = Options {
        api_token: None,
        github_web_url: None,
    };
    let f = router::fixture(options, |_, _| {}).await;
    example_org::load(&f.pool, f.queue.clone()).await;
    // Tabs are control characters too, but a space, accents, emoji and a
    // percent sign are text.
    for uri in [
        "/api/v1/projects?q=caf%C3%A9%20%F0%9F%9A%80%25",
        "/api/v1/projects?q=checkout+api",
        "/?q=check",
        "/projects?q=%E2%80%AE",
    ] {
        let answer = get(&f.app, uri).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {:.300}", answer.body);
    }
    let answer = get(&f.app, "/api/v1/projects/checkout-api").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

/// The real server on the example organisation: a NUL in each route logs
/// no `ERROR` line (before, each logged two and answered 503).
#[tokio::test]
async fn a_nul_should_log_no_error_line() {
    use std::time::Duration;
    use support::server::{eventually, Roster};

    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let logs = tempfile::tempdir().expect("a log folder");
    let org = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_owned()),
        ("ROSTER_LOG_FORMAT", "text".to_owned()),
    ];
    let server = Roster::start(&env, logs.path()).await;
    eventually(
        "the example organisation read",
        Duration::from_secs(30),
        || async {
            let answer = support::http::get(&server.url("/api/v1/projects"))
                .await
                .ok()?;
            let items = answer.json()["items"].as_array()?.len();
            (items > 0).then_some(())
        },
    )
    .await;
    for (template, _) in ROUTES {
        let url = server.url(&template.replace("{}", "a%00b"));
        let answer = support::http::get(&url).await.expect("the server answers");
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{template}: {}",
            answer.body
        );
    }
    let logged = server.logs();
    let errors: Vec<&str> = logged.lines().filter(|l| l.contains("ERROR")).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
