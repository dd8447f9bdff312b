//! The read side of relations (docs/contract.md#relations) through the API:
//! an entry's dependents and the status of its dependencies, the graph of a
//! neighbourhood or of the whole registry, and the systems; bad requests
//! refused clearly, the registry untouched by them.

use crate::support;
use crate::support::registry::{handler, installed_repo};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use roster::controller::Handler;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use serde_json::{json, Value};
use support::http::Answer;
use support::router::{fixture, send, Fixture, Options};

/// `acme/<repo>` (id `id`) with `yaml` as its project file.
fn file(repo: &str, id: i64, yaml: &str) -> (RepoId, Observed) {
    let observed = Observed::Present {
        repo: installed_repo("acme", repo, id),
        file: FileState::Found {
            sha: format!("sha-{id}"),
            bytes: yaml.as_bytes().to_vec(),
        },
    };
    (RepoId(id), observed)
}

pub(crate) async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

async fn apply(handler: &RegistryHandler, (id, observed): (RepoId, Observed)) {
    handler.apply(&id, Ok(observed)).await.expect("reconcile");
}

/// A shop (also the project pages' test): `cart-api` depends on `checkout-api` and on `stock-api`, which
/// no project is; `checkout-api` and `payments` depend on each other; a
/// `billing` system of one project.
const SHOP: &str = "projects:
  - name: cart-api
    owner: shop-team
    lifecycle: production
    system: shop
    depends_on: [checkout-api, stock-api]
  - name: checkout-api
    owner: shop-team
    lifecycle: production
    system: shop
    depends_on: [payments]
";

const PAY: &str = "projects:
  - name: payments
    owner: pay-team
    lifecycle: deprecated
    system: billing
    depends_on: [checkout-api]
  - name: ledger
    owner: pay-team
";

pub(crate) async fn shop() -> Fixture {
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
    )
    .await;
    let handler = handler(&f.pool, f.queue.clone());
    apply(&handler, file("shop", 1, SHOP)).await;
    apply(&handler, file("pay", 2, PAY)).await;
    f
}

fn names(list: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v[key].as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn an_entry_should_show_its_dependents_and_which_dependencies_resolve() {
    let f = shop().await;
    let cart = get(&f.app, "/api/v1/projects/cart-api").await;
    assert_eq!(cart.status, StatusCode::OK, "{}", cart.body);
    let cart = cart.json();
    assert_eq!(
        cart["depends_on_status"],
        json!([
            {"name": "checkout-api", "status": "resolved"},
            {"name": "stock-api", "status": "unknown"}
        ])
    );
    assert_eq!(cart["dependents"], json!([]));
    assert_eq!(cart["dependents_count"], 0);

    let checkout = get(&f.app, "/api/v1/projects/checkout-api").await.json();
    assert_eq!(
        checkout["dependents"],
        json!([
            {"name": "cart-api", "repo": "acme/shop", "path": "project.yaml"},
            {"name": "payments", "repo": "acme/pay", "path": "project.yaml"}
        ])
    );
    assert_eq!(checkout["dependents_count"], 2);
    // The entry's own fields are still there.
    assert_eq!(checkout["system"], "shop");
    assert_eq!(checkout["depends_on"], json!(["payments"]));
}

#[tokio::test]
async fn the_graph_of_a_neighbourhood_should_follow_both_ways_and_keep_cycles() {
    let f = shop().await;
    let one = get(&f.app, "/api/v1/graph?root=checkout-api&depth=1").await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.body);
    let one = one.json();
    assert_eq!(
        names(&one["nodes"], "name"),
        ["cart-api", "checkout-api", "payments"]
    );
    let mut edges: Vec<(String, String)> = one["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["from"].to_string(), e["to"].to_string()))
        .collect();
    edges.sort();
    let quoted = |a: &str, b: &str| (format!("\"{a}\""), format!("\"{b}\""));
    assert_eq!(
        edges,
        [
            quoted("cart-api", "checkout-api"),
            quoted("checkout-api", "payments"),
            quoted("payments", "checkout-api"),
        ],
        "the cycle is drawn both ways"
    );
    assert_eq!(one["truncated"], false);
    let node = |graph: &Value, name: &str| {
        graph["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        node(&one, "payments"),
        json!({"name": "payments", "owner": "pay-team", "system": "billing",
               "lifecycle": "deprecated", "repo": "acme/pay", "status": "resolved"})
    );

    // Two steps from cart-api reach payments and the unknown stock-api.
    let two = get(&f.app, "/api/v1/graph?root=cart-api").await.json();
    assert_eq!(
        names(&two["nodes"], "name"),
        ["cart-api", "checkout-api", "payments", "stock-api"]
    );
    assert_eq!(
        node(&two, "stock-api"),
        json!({"name": "stock-api", "owner": null, "system": null,
               "lifecycle": null, "repo": null, "status": "unknown"})
    );

    // The whole registry: every entry and the unknown name; ledger alone.
    let all = get(&f.app, "/api/v1/graph").await.json();
    assert_eq!(
        names(&all["nodes"], "name"),
        [
            "cart-api",
            "checkout-api",
            "ledger",
            "payments",
            "stock-api"
        ]
    );
    assert_eq!(all["edges"].as_array().map(Vec::len), Some(4));
}

#[tokio::test]
async fn a_bad_graph_request_should_be_refused_clearly_and_change_nothing() {
    let f = shop().await;
    let before = get(&f.app, "/api/v1/projects?limit=1000").await.body;
    let long = "a".repeat(5000);
    let cases = [
        (
            "/api/v1/graph?root=cart-api&depth=4",
            400,
            "depth: expected 1, 2 or 3",
        ),
        (
            "/api/v1/graph?root=cart-api&depth=0",
            400,
            "depth: expected 1, 2 or 3",
        ),
        ("/api/v1/graph?depth=lots", 400, "depth: expected 1, 2 or 3"),
        (
            "/api/v1/graph?root=no-such-project",
            404,
            "root: no project no-such-project",
        ),
        (
            "/api/v1/graph?root=a%00b",
            400,
            "root: holds the control character U+0000",
        ),
        (
            "/api/v1/graph?root=%27%3B%20drop%20table%20entries%3B--",
            400,
            "root: not a project name",
        ),
        (
            "/api/v1/graph?root=%E2%80%AEipa-trac",
            400,
            "root: not a project name",
        ),
        (
            "/api/v1/graph?root=Cart-API",
            400,
            "root: not a project name",
        ),
        ("/api/v1/systems?limit=0", 400, "limit:"),
        ("/api/v1/systems?cursor=nonsense", 400, "cursor:"),
    ];
    for (uri, status, message) in cases {
        let answer = get(&f.app, uri).await;
        assert_eq!(answer.status.as_u16(), status, "{uri}: {}", answer.body);
        let error = answer.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.starts_with(message), "{uri}: {error}");
    }
    let answer = get(&f.app, &format!("/api/v1/graph?root={long}")).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(
        answer.body.len() < 300,
        "the name is not echoed: {}",
        answer.body
    );
    assert_eq!(
        get(&f.app, "/api/v1/projects?limit=1000").await.body,
        before
    );
}

#[tokio::test]
async fn systems_should_list_their_projects_and_owners() {
    let f = shop().await;
    let answer = get(&f.app, "/api/v1/systems").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(
        answer.json(),
        json!({"items": [
            {"name": "billing", "projects": ["payments"], "project_count": 1,
             "owners": [{"owner": "pay-team", "projects": 1}]},
            {"name": "shop", "projects": ["cart-api", "checkout-api"], "project_count": 2,
             "owners": [{"owner": "shop-team", "projects": 2}]}
        ], "next_cursor": null})
    );
    let first = get(&f.app, "/api/v1/systems?limit=1").await.json();
    assert_eq!(names(&first["items"], "name"), ["billing"]);
    let cursor = first["next_cursor"].as_str().unwrap_or_default().to_owned();
    let next = get(&f.app, &format!("/api/v1/systems?limit=1&cursor={cursor}"))
        .await
        .json();
    assert_eq!(names(&next["items"], "name"), ["shop"]);
    assert_eq!(next["next_cursor"], Value::Null);
}
