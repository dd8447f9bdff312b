//! Relations (docs/contract.md#relations) through the registry and the API: `depends_on` and
//! `system` stored with the entry, shown in its JSON and in the change
//! log's diffs.

use crate::support;
use crate::support::registry::{handler, installed_repo};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use roster::controller::Handler;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use support::http::Answer;
use support::router::{fixture, send, Fixture, Options};

/// `acme/<repo>` (id `id`) with `yaml` as its project file at `sha`.
fn file(repo: &str, id: i64, sha: &str, yaml: &str) -> (RepoId, Observed) {
    let observed = Observed::Present {
        repo: installed_repo("acme", repo, id),
        file: FileState::Found {
            sha: sha.to_owned(),
            bytes: yaml.as_bytes().to_vec(),
        },
    };
    (RepoId(id), observed)
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

async fn world() -> (Fixture, RegistryHandler) {
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
    )
    .await;
    let handler = handler(&f.pool, f.queue.clone());
    (f, handler)
}

async fn apply(handler: &RegistryHandler, (id, observed): (RepoId, Observed)) {
    handler.apply(&id, Ok(observed)).await.expect("reconcile");
}

#[tokio::test]
async fn depends_on_and_system_should_be_stored_shown_and_logged() {
    let (f, handler) = world().await;
    let yaml = "name: cart-api\nowner: t\ndepends_on: [checkout-api]\nsystem: shop\n";
    apply(&handler, file("cart", 1, "sha1", yaml)).await;
    let entry = get(&f.app, "/api/v1/projects/cart-api").await;
    assert_eq!(entry.status, StatusCode::OK, "{}", entry.body);
    let body = entry.json();
    assert_eq!(body["depends_on"], serde_json::json!(["checkout-api"]));
    assert_eq!(body["system"], "shop");

    let moved = "name: cart-api\nowner: t\ndepends_on: [checkout-api, stock-api]\n";
    apply(&handler, file("cart", 1, "sha2", moved)).await;
    let history = get(&f.app, "/api/v1/projects/cart-api/history")
        .await
        .json();
    let newest = &history["items"][0];
    assert_eq!(newest["kind"], "changed");
    assert_eq!(
        newest["before"]["depends_on"],
        serde_json::json!(["checkout-api"])
    );
    assert_eq!(newest["before"]["system"], "shop");
    assert_eq!(
        newest["after"]["depends_on"],
        serde_json::json!(["checkout-api", "stock-api"])
    );
    assert_eq!(newest["after"]["system"], serde_json::Value::Null);
}
