//! Graph reads cannot hold the database (docs/contract.md#bounds): who
//! depends on a set of names is asked of the index on `depends_on`, a few
//! graphs are read at once and the rest refused at once with 503 and
//! `Retry-After` while other reads answer, and a graph read that runs past
//! its time is cancelled and refused the same way.

use crate::support;
use support::registry::github_repo;
use support::router::{fixture_tuned, send, Options};
use support::seed::Seed;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use roster::registry::read_models::relations::DEPENDENTS_SQL;
use roster::web::graph_reads::GraphReads;
use serde_json::Value;

/// Projects of the hub registry: every one depends on `hub`.
const REPOS: usize = 20;
const PER_REPO: usize = 100;

fn name(i: usize) -> String {
    format!("svc-{i:05}")
}

/// A registry of `REPOS` repositories of `PER_REPO` projects, each
/// depending on `hub` and on two others, and `hub` itself.
async fn hub_registry(seed: &Seed) {
    let total = REPOS * PER_REPO;
    seed.repo_as(1, github_repo("acme", "hub", 1))
        .await
        .synced(&"1".repeat(40), "name: hub\nowner: platform\n")
        .await;
    for r in 0..REPOS {
        let mut file = String::from("projects:\n");
        for p in 0..PER_REPO {
            let i = r * PER_REPO + p;
            file.push_str(&format!(
                "  - name: {}\n    owner: team-{}\n    depends_on: [hub, {}, {}]\n",
                name(i),
                i % 7,
                name((i + 37) % total),
                name((i + 149) % total),
            ));
        }
        seed.repo_as(
            r as i64 + 10,
            github_repo("acme", format!("repo-{r:02}"), 1),
        )
        .await
        .synced(&format!("{:040x}", r + 10), &file)
        .await;
    }
}

/// Every index the plan of `plan` (EXPLAIN's JSON) scans.
fn indexes(plan: &Value, found: &mut Vec<String>) {
    match plan {
        Value::Object(map) => {
            if let Some(Value::String(index)) = map.get("Index Name") {
                found.push(index.clone());
            }
            map.values().for_each(|v| indexes(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| indexes(v, found)),
        _ => {}
    }
}

#[tokio::test]
async fn the_dependents_of_a_hubs_dependents_should_be_read_through_the_index() {
    let f = fixture_tuned(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
        |_| {},
    )
    .await;
    hub_registry(&Seed::new(&f.pool)).await;
    sqlx::query("analyze")
        .execute(&f.pool)
        .await
        .expect("analyze");
    // The second step of a graph of depth 3 around `hub`: who depends on
    // any of its 2,000 dependents.
    let names: Vec<String> = (0..REPOS * PER_REPO).map(name).collect();
    let (plan,): (Value,) = sqlx::query_as(&format!("explain (format json) {DEPENDENTS_SQL}"))
        .bind(&names)
        .bind(20_001_i64)
        .fetch_one(&f.pool)
        .await
        .expect("the plan");
    let mut used = Vec::new();
    indexes(&plan, &mut used);
    println!("indexes of the dependents' plan: {used:?}");
    assert!(
        used.iter().any(|i| i == "entries_depends_on"),
        "the dependents of 2,000 names are not read through entries_depends_on: {plan}"
    );

    // And the graph is whole.
    let answer = send(
        &f.app,
        Request::get("/api/v1/graph?root=hub&depth=3")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let graph = answer.json();
    let nodes = graph["nodes"].as_array().map_or(0, Vec::len);
    println!(
        "depth 3 around hub: {nodes} nodes, truncated {}",
        graph["truncated"]
    );
    assert!(nodes > 1, "{graph}");
}

#[tokio::test]
async fn graph_reads_past_the_bound_should_be_refused_at_once_while_other_reads_answer() {
    let reads = GraphReads::new(2);
    let f = fixture_tuned(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
        {
            let reads = reads.clone();
            move |state| state.graph_reads = reads
        },
    )
    .await;
    Seed::new(&f.pool)
        .repo_as(1, github_repo("acme", "shop", 1))
        .await
        .synced(
            &"1".repeat(40),
            "projects:\n  - name: cart-api\n    owner: shop\n    depends_on: [stock-api]\n  \
             - name: stock-api\n    owner: shop\n",
        )
        .await;
    let get = |uri: &str| Request::get(uri).body(Body::empty()).expect("a request");
    // Two graph reads are under way: they hold every place.
    let held: Vec<_> = (0..2)
        .map(|_| reads.try_start().expect("a place to read a graph"))
        .collect();
    for _ in 0..5 {
        let asked = Instant::now();
        let answer = send(&f.app, get("/api/v1/graph?root=cart-api&depth=3")).await;
        println!(
            "graph read past the bound: {} in {:?}",
            answer.status,
            asked.elapsed()
        );
        assert_eq!(
            answer.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            answer.body
        );
        assert_eq!(answer.header(header::RETRY_AFTER), "1");
        let error = answer.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.contains("too many graph reads at once"), "{error}");
    }
    let asked = Instant::now();
    let project = send(&f.app, get("/api/v1/projects/cart-api")).await;
    println!(
        "a project beside them: {} in {:?}",
        project.status,
        asked.elapsed()
    );
    assert_eq!(project.status, StatusCode::OK, "{}", project.body);
    assert_eq!(project.json()["name"], "cart-api");

    drop(held);
    let answer = send(&f.app, get("/api/v1/graph?root=cart-api&depth=3")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let graph = answer.json();
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .map(|n| n.iter().filter_map(|n| n["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(nodes, vec!["cart-api", "stock-api"]);
}

#[tokio::test]
async fn a_graph_read_past_its_time_should_be_cancelled_and_refused_with_retry_after() {
    let f = fixture_tuned(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
        |_| {},
    )
    .await;
    Seed::new(&f.pool)
        .repo_as(1, github_repo("acme", "shop", 1))
        .await
        .synced(&"1".repeat(40), "name: cart-api\nowner: shop\n")
        .await;
    // Another session holds the entries: a graph read cannot get past
    // its first statement until its time runs out.
    let mut locker = f.pool.begin().await.expect("a transaction");
    sqlx::query("lock table entries in access exclusive mode")
        .execute(&mut *locker)
        .await
        .expect("the lock");
    let asked = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        send(
            &f.app,
            Request::get("/api/v1/graph?root=cart-api")
                .body(Body::empty())
                .expect("a request"),
        ),
    )
    .await;
    let took = asked.elapsed();
    locker.rollback().await.expect("the lock given back");
    let answer = answer.unwrap_or_else(|_| panic!("no answer after {took:?}"));
    println!("graph read behind a lock: {} after {took:?}", answer.status);
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.body
    );
    assert_eq!(answer.header(header::RETRY_AFTER), "1");
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.contains("graph reads"), "{error}");
    // The registry is as it was.
    let project = send(
        &f.app,
        Request::get("/api/v1/projects/cart-api")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(project.status, StatusCode::OK, "{}", project.body);
}
