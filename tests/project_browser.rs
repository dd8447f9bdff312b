//! A project's page in a real browser (headless Chromium over the DevTools
//! protocol), on the example organisation: the picture of its
//! neighbourhood renders (every node drawn, with a size, coloured by the
//! stylesheet), and loading the page breaks no rule of its
//! Content-Security-Policy. Photographed as `project.png` (see
//! `browser.rs` for where screenshots go).

use std::time::Duration;

use crate::browser::screenshot_dir;
use crate::support;

use axum::body::Body;
use axum::http::{header, Request};
use axum::response::Html;
use axum::routing::get;
use serde_json::Value;
use support::cdp::{find_chromium, Browser};
use support::example_org;
use support::router::{self, Options};

/// Collects every Content-Security-Policy violation of a document.
const WATCH_CSP: &str = "window.__violations = [];
document.addEventListener('securitypolicyviolation', e =>
    window.__violations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_should_draw_a_project_neighbourhood_within_the_csp() {
    let Some(binary) = find_chromium() else {
        eprintln!(
            "note: chromium is not on PATH; skipping the browser test (scripts/test installs it)"
        );
        return;
    };
    let options = Options {
        api_token: Some("browser-test-token"),
        github_web_url: Some("https://github.com"),
    };
    let f = router::fixture(options, |_, _| {}).await;
    example_org::load(&f.pool, f.queue.clone()).await;
    // The pages' own policy, on a page that breaks it.
    let page = router::send(
        &f.app,
        Request::get("/projects/checkout-api")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    let policy = page.header(header::CONTENT_SECURITY_POLICY).to_owned();
    assert!(policy.contains("style-src 'self'"), "{policy}");
    let probe = move || async move {
        (
            [(header::CONTENT_SECURITY_POLICY, policy.clone())],
            Html("<!doctype html><style>p { color: red }</style><p>probe</p>"),
        )
    };
    let app = f.app.route("/csp-probe", get(probe));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let profile = tempfile::tempdir().expect("profile dir");
    let mut browser = Browser::start(&binary, profile.path()).await;
    browser.on_every_document(WATCH_CSP).await;
    browser.goto(&format!("{base}/projects/checkout-api")).await;
    browser
        .wait_for(
            "the picture",
            "document.readyState === 'complete' && !!document.querySelector('svg.graph')",
            Duration::from_secs(30),
        )
        .await;

    // Every node is drawn, with a size, and coloured by the stylesheet.
    let nodes = browser
        .eval(
            "Array.from(document.querySelectorAll('svg.graph [data-node]')).map(n => {
                const box = n.querySelector('rect').getBoundingClientRect();
                return [n.dataset.node, box.width > 20 && box.height > 10];
            }).sort()",
        )
        .await;
    assert_eq!(
        nodes,
        Some(serde_json::json!([
            ["billing-api", true],
            ["checkout-api", true],
            ["fraud-detector", true],
            ["notifications", true]
        ])),
        "the nodes of checkout-api's neighbourhood"
    );
    let fill = |selector: &str| {
        format!("getComputedStyle(document.querySelector('{selector} rect')).fill")
    };
    let production = browser.eval(&fill("[data-node=checkout-api]")).await;
    assert_eq!(production, Some(Value::from("rgb(220, 236, 248)")));
    let dash = browser
        .eval("getComputedStyle(document.querySelector('[data-node=fraud-detector] rect')).strokeDasharray")
        .await;
    assert_eq!(
        dash,
        Some(Value::from("5px, 4px")),
        "the unknown name is dashed"
    );
    let edges = browser
        .eval("document.querySelectorAll('svg.graph path.edge').length")
        .await;
    assert_eq!(edges, Some(Value::from(4)));

    // Nothing broke the policy while the page loaded...
    let violations = browser.eval("window.__violations").await;
    assert_eq!(violations, Some(serde_json::json!([])));
    // ...and the watch does see one: a page under the same policy with
    // an inline style.
    browser.goto(&format!("{base}/csp-probe")).await;
    browser
        .wait_for(
            "the watch to see the inline style refused",
            "window.__violations.length > 0",
            Duration::from_secs(10),
        )
        .await;

    let (dir, _keep) = screenshot_dir();
    browser.goto(&format!("{base}/projects/checkout-api")).await;
    browser
        .wait_for(
            "the picture again",
            "document.readyState === 'complete' && !!document.querySelector('svg.graph')",
            Duration::from_secs(30),
        )
        .await;
    let png = browser.screenshot(1280, 1300).await;
    std::fs::write(dir.join("project.png"), png).expect("write project.png");
    eprintln!("screenshot in {}", dir.display());
}
