//! The webhook route under attack (docs/contract.md#bounds): oversized and unsigned bodies,
//! more senders than the route reads at once, ids GitHub never sends, event
//! names that would mint metric series, and a payload naming 300,000
//! repositories. Each answer is a clear error, and what is registered stays
//! as it was.

use crate::support;
use crate::support::registry::{github_repo, on_branch, queue};
use support::fake_github;
use support::github_server;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use fake_github::FakeGithub;
use github_server::{github_env, project_yaml, push, repo, wait_synced, FILE};
use prometheus_client::registry::Registry;
use roster::db::testing::fresh_database;
use roster::intake::admission::Admission;
use roster::intake::{sign, WebhookLimits, WebhookState, MAX_BODY_BYTES, PATH};
use roster::metrics::{Metrics, OTHER_EVENT, WEBHOOK_EVENTS};
use roster::registry::ensure_known;
use roster::source::{RepoId, RepoInfo};
use roster::web::router::webhook_with_admission as router_with_admission;
use roster::web::{router_with, AppState};
use secrecy::SecretString;
use serde_json::{json, Value};
use sqlx::PgPool;
use support::http;
use support::server::{eventually, Roster};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

const SECRET: &str = "bounds test secret";

/// The repository every test registers first: what must stay untouched.
const KEPT_ID: i64 = 4242;

/// The webhook route (with the API, for `/metrics`) on a fresh database
/// holding [`KEPT_ID`].
struct Harness {
    pool: PgPool,
    app: Router,
    admission: Arc<Admission>,
}

async fn harness(limits: WebhookLimits) -> Harness {
    let (pool, _url) = fresh_database().await.expect("a fresh test database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let queue = queue(&pool);
    let (hooks, admission) = router_with_admission(WebhookState {
        pool: pool.clone(),
        queue: queue.clone(),
        secret: SecretString::from(SECRET),
        metrics: metrics.clone(),
        limits,
        free_pushes: None,
        shutdown: roster::shutdown::channel().1,
    });
    let state = AppState {
        pool: pool.clone(),
        queue,
        metrics,
        registry: Arc::new(registry),
        api_token: None,
        github_web_url: None,
        project_file: "project.yaml".to_owned(),
        resync_interval: Duration::from_secs(3600),
        auth_throttle: Default::default(),
        trust_proxy: false,
        relations: roster::project::relations::RelationsMode::default(),
        graph_reads: Default::default(),
    };
    ensure_known(&pool, &[(RepoId(KEPT_ID), kept_info())])
        .await
        .expect("seed the registry");
    Harness {
        pool,
        app: router_with(state, hooks),
        admission,
    }
}

fn kept_info() -> RepoInfo {
    on_branch(github_repo("acme", "kept", 1), "trunk")
}

/// The registry, the queue and the listing request: what no refused
/// delivery may change.
#[derive(Debug, PartialEq, Eq)]
struct Registered {
    repositories: Vec<(i64, String, String, String, String)>,
    queued: Vec<i64>,
    listing_requested: bool,
}

async fn registered(pool: &PgPool) -> Registered {
    let repositories = sqlx::query_as(
        "select id, owner, name, coalesce(default_branch, ''), status
         from repositories order by id",
    )
    .fetch_all(pool)
    .await
    .expect("the repositories");
    let queued = sqlx::query_scalar("select repo_id from queue order by repo_id")
        .fetch_all(pool)
        .await
        .expect("the queue");
    let listing_requested = sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("the listing schedule");
    Registered {
        repositories,
        queued,
        listing_requested,
    }
}

/// Only [`KEPT_ID`], as seeded, and nothing queued or requested.
fn untouched() -> Registered {
    Registered {
        repositories: vec![(
            KEPT_ID,
            "acme".to_owned(),
            "kept".to_owned(),
            "trunk".to_owned(),
            "pending".to_owned(),
        )],
        queued: vec![],
        listing_requested: false,
    }
}

async fn delivery_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from deliveries")
        .fetch_one(pool)
        .await
        .expect("the deliveries")
}

fn signed(event: &str, delivery: &str, body: Vec<u8>) -> Request<Body> {
    Request::post(PATH)
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", sign(SECRET, &body))
        .body(Body::from(body))
        .expect("a valid request")
}

/// Sends one request through the router: status and body.
async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Vec<u8>) {
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("the router answers");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a readable answer");
    (status, bytes.to_vec())
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

fn push_body(id: i64) -> Vec<u8> {
    github_server::push_payload(id, "acme", "pushed")
}

/// Serves `app` on a port of its own, as `roster serve` does.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("local address").to_string();
    tokio::spawn(roster::web::serve::serve(
        listener,
        app,
        std::future::pending(),
    ));
    address
}

/// A request header for [`PATH`] declaring `length` body bytes, with a
/// signature that is well formed but made with another secret.
fn forged_header(length: u64) -> String {
    let signature = sign("not the secret", b"whatever");
    format!(
        "POST {PATH} HTTP/1.1\r\nHost: roster\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: forged\r\n\
         X-Hub-Signature-256: {signature}\r\n\r\n"
    )
}

/// Reads an HTTP/1.1 answer until the server closes or `limit` passes:
/// its status code and the whole text.
async fn read_answer(stream: &mut TcpStream, limit: Duration) -> Option<(u16, String)> {
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(limit, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
            if answer_is_complete(&text) {
                break;
            }
        }
    })
    .await;
    read.ok()?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    Some((status, text))
}

/// True once a header and a `Content-Length` body have arrived.
fn answer_is_complete(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok());
    length.is_some_and(|n| body.len() >= n)
}

#[tokio::test]
async fn a_declared_100_mib_body_should_be_refused_413_before_any_of_it_is_sent() {
    let h = harness(WebhookLimits::default()).await;
    let address = serve(h.app.clone()).await;
    let mut stream = TcpStream::connect(&address).await.expect("connect");
    stream
        .write_all(forged_header(100 * 1024 * 1024).as_bytes())
        .await
        .expect("send the header");
    let asked = Instant::now();
    // Not one body byte has been sent: the answer must come regardless.
    let answer = read_answer(&mut stream, Duration::from_secs(5)).await;
    let (status, text) = answer.expect("an answer without the body");
    println!("413 after {:?}, no body byte sent", asked.elapsed());
    assert_eq!(status, 413, "{text}");
    assert!(
        text.contains(r#"{"error":"body exceeds 25 MiB"}"#),
        "{text}"
    );
    assert_eq!(registered(&h.pool).await, untouched());
    assert_eq!(delivery_count(&h.pool).await, 0);
}

#[tokio::test]
async fn a_declared_body_without_a_signature_should_be_refused_401_before_it_is_read() {
    let h = harness(WebhookLimits::default()).await;
    let address = serve(h.app.clone()).await;
    let mut stream = TcpStream::connect(&address).await.expect("connect");
    let header = format!(
        "POST {PATH} HTTP/1.1\r\nHost: roster\r\nContent-Length: {MAX_BODY_BYTES}\r\n\
         X-GitHub-Event: push\r\n\r\n"
    );
    stream
        .write_all(header.as_bytes())
        .await
        .expect("send the header");
    let answer = read_answer(&mut stream, Duration::from_secs(5)).await;
    let (status, text) = answer.expect("an answer without the body");
    assert_eq!(status, 401, "{text}");
    assert!(
        text.contains("missing X-Hub-Signature-256 header"),
        "{text}"
    );
    assert_eq!(registered(&h.pool).await, untouched());
    assert_eq!(delivery_count(&h.pool).await, 0);
}

/// `VmHWM` (peak resident memory) of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in /proc/{pid}/status"))
}

/// Sends a forged 25 MiB body over its own connection, as fast as the
/// server takes it; the status answered (`None`: closed without one).
async fn forged_sender(address: String) -> Option<u16> {
    let mut stream = TcpStream::connect(&address).await.ok()?;
    let length = MAX_BODY_BYTES as u64;
    stream
        .write_all(forged_header(length).as_bytes())
        .await
        .ok()?;
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while sent < MAX_BODY_BYTES {
            let n = chunk.len().min(MAX_BODY_BYTES - sent);
            // The server may answer (503) and close before taking it all.
            if write.write_all(&chunk[..n]).await.is_err() {
                return;
            }
            sent += n;
        }
        // Keep the write half open until the answer is read.
        std::future::pending::<()>().await;
    });
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let limit = Duration::from_secs(60);
    let _ = tokio::time::timeout(limit, async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
            if answer_is_complete(&text) {
                break;
            }
        }
    })
    .await;
    writer.abort();
    let text = String::from_utf8_lossy(&text);
    text.split(' ').nth(1).and_then(|s| s.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_senders_of_25_mib_forged_bodies_should_not_grow_the_server_past_150_mib() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "before"));
    let (pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let server = Roster::start(&github_env(&fake, &url), logs.path()).await;
    let head = fake.head(id).expect("a head");
    let before = wait_synced(&server.base, "svc", &head, Duration::from_secs(20)).await;
    let pid = server.child.id();
    let at_rest = peak_rss_kib(pid);

    let address = server.base.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let senders: Vec<_> = (0..20)
        .map(|_| tokio::spawn(forged_sender(address.clone())))
        .collect();
    let mut answers = Vec::new();
    for sender in senders {
        answers.push(sender.await.ok().flatten());
    }
    let took = started.elapsed();
    let peak = peak_rss_kib(pid);
    let unauthorized = answers.iter().filter(|a| **a == Some(401)).count();
    let busy = answers.iter().filter(|a| **a == Some(503)).count();
    println!(
        "20 forged 25 MiB bodies in {took:?}: {unauthorized} answered 401, {busy} answered 503; \
         peak RSS {} MiB (at rest {} MiB)",
        peak / 1024,
        at_rest / 1024
    );
    assert!(
        answers.iter().all(|a| matches!(a, Some(401 | 503))),
        "{answers:?}"
    );
    assert!(unauthorized >= 1, "{answers:?}");
    assert!(peak < 150 * 1024, "peak RSS {peak} KiB");

    // The server still serves, and nothing registered moved.
    let health = http::get(&server.url("/healthz")).await.expect("healthz");
    assert_eq!(health.status, 200);
    assert_eq!(repo(&server.base, "svc").await, Some(before));
    let forged_rows: i64 =
        sqlx::query_scalar("select count(*) from deliveries where id = 'forged'")
            .fetch_one(&pool)
            .await
            .expect("the deliveries");
    assert_eq!(forged_rows, 0);

    // A signed push is still taken and applied.
    let head = fake.push_file(id, FILE, project_yaml("svc", "after").as_bytes());
    let answer = push(&server.base, id, "svc").await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    wait_synced(&server.base, "svc", &head, Duration::from_secs(20)).await;
}

#[tokio::test]
async fn past_the_concurrency_bound_a_delivery_should_wait_then_answer_503() {
    let wait = Duration::from_secs(2);
    let h = harness(WebhookLimits {
        concurrency: 2,
        wait,
        ..WebhookLimits::default()
    })
    .await;
    let address = serve(h.app.clone()).await;

    // Two slow senders: a small declared body, a few bytes of it, then
    // nothing. Each holds a slot while its body is read.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(&address).await.expect("connect");
        stream
            .write_all(forged_header(1000).as_bytes())
            .await
            .expect("send the header");
        stream
            .write_all(b"{\"ref\":")
            .await
            .expect("send some body");
        slow.push(stream);
    }
    let admission = h.admission.clone();
    eventually("both slots to be taken", Duration::from_secs(10), || {
        let free = admission.free_slots();
        async move { (free == 0).then_some(()) }
    })
    .await;

    let base = format!("http://{address}");
    let body = push_body(77);
    let signature = sign(SECRET, &body);
    let headers = [
        ("content-type", "application/json"),
        ("x-github-event", "push"),
        ("x-github-delivery", "waited"),
        ("x-hub-signature-256", signature.as_str()),
    ];
    let asked = Instant::now();
    let answer = http::send(
        Method::POST,
        &format!("{base}{PATH}"),
        &headers,
        body.clone(),
    )
    .await
    .expect("an answer");
    let waited = asked.elapsed();
    println!("503 after {waited:?} with both slots held");
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        waited >= wait,
        "answered after {waited:?}, before the {wait:?} wait"
    );
    assert_eq!(answer.header(axum::http::header::RETRY_AFTER), "2");
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.contains("too many webhook deliveries"), "{error}");
    assert_eq!(registered(&h.pool).await, untouched());
    assert_eq!(delivery_count(&h.pool).await, 0);

    // Once the slow senders are gone, the same delivery goes through.
    drop(slow);
    let admission = h.admission.clone();
    eventually(
        "the slots to be given back",
        Duration::from_secs(10),
        || {
            let free = admission.free_slots();
            async move { (free == 2).then_some(()) }
        },
    )
    .await;
    let answer = http::send(Method::POST, &format!("{base}{PATH}"), &headers, body)
        .await
        .expect("an answer");
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert_eq!(registered(&h.pool).await.queued, vec![77]);
}

#[tokio::test]
async fn zero_or_negative_ids_should_answer_400_and_register_nothing() {
    let h = harness(WebhookLimits::default()).await;
    let listed = |repo: i64, installation: i64| {
        json!({
            "action": "added",
            "installation": {"id": installation, "account": {"login": "acme"}},
            "repositories_added": [
                {"id": 501, "name": "fine", "full_name": "acme/fine"},
                {"id": repo, "name": "odd", "full_name": "acme/odd"},
            ],
            "repositories_removed": [],
        })
        .to_string()
        .into_bytes()
    };
    let cases = [
        (
            "push",
            push_body(0),
            "repository id must be a positive integer, not 0",
        ),
        (
            "push",
            push_body(-12),
            "repository id must be a positive integer, not -12",
        ),
        (
            "repository",
            {
                let mut value: Value = serde_json::from_slice(&push_body(-1)).unwrap_or_default();
                value["action"] = "created".into();
                value.to_string().into_bytes()
            },
            "repository id must be a positive integer, not -1",
        ),
        (
            "installation_repositories",
            listed(-5, 1),
            "repository id must be a positive integer, not -5",
        ),
        (
            "installation_repositories",
            listed(502, 0),
            "installation id must be a positive integer, not 0",
        ),
        (
            "installation",
            json!({"action": "created", "installation": {"id": -9}})
                .to_string()
                .into_bytes(),
            "installation id must be a positive integer, not -9",
        ),
    ];
    for (i, (event, body, expected)) in cases.into_iter().enumerate() {
        let (status, answer) = send(&h.app, signed(event, &format!("bad-{i}"), body)).await;
        let answer = json_of(&answer);
        assert_eq!(status, StatusCode::BAD_REQUEST, "{event}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{event}: {error}");
    }
    assert_eq!(registered(&h.pool).await, untouched());
}

#[tokio::test]
async fn three_thousand_event_names_on_one_signed_body_should_add_no_metric_series() {
    let h = harness(WebhookLimits::default()).await;
    let body = push_body(88);
    let mut answers = Vec::new();
    for batch in (0..3000).collect::<Vec<u32>>().chunks(50) {
        let sent = batch.iter().map(|i| {
            send(
                &h.app,
                signed(&format!("evil-{i}"), "replayed", body.clone()),
            )
        });
        answers.extend(futures_util::future::join_all(sent).await);
    }
    assert!(answers
        .iter()
        .all(|(status, _)| *status == StatusCode::ACCEPTED));

    let request = Request::get("/metrics")
        .body(Body::empty())
        .expect("a request");
    let (status, text) = send(&h.app, request).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8_lossy(&text);
    let labels: BTreeSet<String> = text
        .lines()
        .filter(|line| line.starts_with("roster_webhooks_total{"))
        .filter_map(|line| line.split("event=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    println!("event labels after 3,000 names: {labels:?}");
    let allowed: BTreeSet<String> = WEBHOOK_EVENTS
        .iter()
        .chain([&OTHER_EVENT])
        .map(|e| e.to_string())
        .collect();
    assert!(labels.is_subset(&allowed), "{labels:?}");
    assert!(
        text.contains(r#"roster_webhooks_total{event="other",outcome="ignored"} 3000"#),
        "{text}"
    );
    assert_eq!(registered(&h.pool).await, untouched());
}

#[tokio::test]
async fn a_300000_repository_payload_should_be_answered_with_counts_in_under_1_kib() {
    let h = harness(WebhookLimits::default()).await;
    let added: Vec<Value> = (1..=300_000)
        .map(|i| json!({"id": 1_000_000 + i, "name": format!("r{i}"), "full_name": format!("acme/r{i}")}))
        .collect();
    let body = json!({
        "action": "added",
        "installation": {"id": 1, "account": {"login": "acme"}},
        "repositories_added": added,
        "repositories_removed": [],
    })
    .to_string()
    .into_bytes();
    let size = body.len();
    let asked = Instant::now();
    let (status, answer) = send(&h.app, signed("installation_repositories", "many", body)).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    println!(
        "{} MiB payload answered in {:?} with {} bytes: {text}",
        size / (1024 * 1024),
        asked.elapsed(),
        answer.len()
    );
    assert_eq!(status, StatusCode::ACCEPTED, "{text}");
    assert!(answer.len() < 1024, "{} bytes", answer.len());
    let answer = json_of(&answer);
    assert_eq!(answer["status"], "queued", "{answer}");
    // Past the bound of repositories one delivery names, the listing finds
    // them: nothing is written one by one.
    assert_eq!(answer["enqueued"], 0, "{answer}");
    assert_eq!(answer["listing_requested"], true, "{answer}");
    assert_eq!(
        registered(&h.pool).await,
        Registered {
            listing_requested: true,
            ..untouched()
        }
    );
}

/// Slow senders of the attack: each from `from`, declares a body of a
/// million bytes under a well-formed but wrong signature, then sends one
/// byte a second until the server closes the connection. Each task ends
/// with what the server answered (`None`: closed without an answer).
fn slow_senders(address: &str, from: &str, n: usize) -> tokio::task::JoinSet<Option<u16>> {
    let mut senders = tokio::task::JoinSet::new();
    let (address, from): (std::net::SocketAddr, std::net::IpAddr) = (
        address.parse().expect("the server's address"),
        from.parse().expect("a sender's address"),
    );
    for _ in 0..n {
        senders.spawn(async move {
            let socket = tokio::net::TcpSocket::new_v4().ok()?;
            socket.bind(std::net::SocketAddr::new(from, 0)).ok()?;
            let mut stream = socket.connect(address).await.ok()?;
            stream
                .write_all(forged_header(1_000_000).as_bytes())
                .await
                .ok()?;
            let (mut read, mut write) = stream.split();
            let trickle = async {
                loop {
                    if write.write_all(b" ").await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            };
            let mut text = Vec::new();
            let answered = async {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = read.read(&mut buf).await {
                    text.extend_from_slice(&buf[..n]);
                }
            };
            tokio::select! {
                () = trickle => {}
                () = answered => {}
            }
            let text = String::from_utf8_lossy(&text).into_owned();
            text.split(' ').nth(1).and_then(|s| s.parse().ok())
        });
    }
    senders
}

/// A real delivery of a push to repository `id`, sent at once: its
/// answer and how long it took.
async fn real_delivery(base: &str, delivery: &str, id: i64) -> (http::Answer, Duration) {
    let body = push_body(id);
    let signature = sign(SECRET, &body);
    let headers = [
        ("content-type", "application/json"),
        ("x-github-event", "push"),
        ("x-github-delivery", delivery),
        ("x-hub-signature-256", signature.as_str()),
    ];
    let asked = Instant::now();
    let answer = http::send(Method::POST, &format!("{base}{PATH}"), &headers, body)
        .await
        .expect("an answer");
    (answer, asked.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_slow_senders_from_one_address_should_not_hold_up_a_real_delivery() {
    let h = harness(WebhookLimits::default()).await;
    let address = serve(h.app.clone()).await;
    let _slow = slow_senders(&address, "127.0.0.2", 100);
    let concurrency = WebhookLimits::default().concurrency;
    let admission = h.admission.clone();
    // However many slots one address may hold, the slow senders have
    // taken them all (and, before the bound per address, every slot).
    eventually(
        "the slow senders to hold their slots",
        Duration::from_secs(10),
        || {
            let taken = concurrency - admission.free_slots();
            async move { (taken >= WebhookLimits::default().per_client.min(concurrency)).then_some(()) }
        },
    )
    .await;

    let base = format!("http://{address}");
    for (i, id) in [(1, 71), (2, 72), (3, 73), (4, 74)] {
        let (answer, took) = real_delivery(&base, &format!("real-{i}"), id).await;
        println!(
            "real delivery {i}: {} in {took:?} beside 100 slow senders, {} slots free",
            answer.status,
            h.admission.free_slots()
        );
        assert_eq!(answer.status, 202, "delivery {i}: {}", answer.body);
        assert!(
            took < WebhookLimits::default().wait,
            "delivery {i} waited {took:?}, as long as a delivery may wait for a slot"
        );
    }
    assert_eq!(registered(&h.pool).await.queued, vec![71, 72, 73, 74]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_in_should_be_cut_off_at_its_deadline_and_give_its_slot_back() {
    let deadline = Duration::from_secs(1);
    let h = harness(WebhookLimits {
        body_grace: deadline,
        ..WebhookLimits::default()
    })
    .await;
    let address = serve(h.app.clone()).await;
    let asked = Instant::now();
    let mut slow = slow_senders(&address, "127.0.0.3", 1);
    let answer = tokio::time::timeout(Duration::from_secs(15), slow.join_next())
        .await
        .ok()
        .flatten()
        .and_then(Result::ok)
        .flatten();
    let took = asked.elapsed();
    println!("a trickling body answered {answer:?} after {took:?}");
    assert_eq!(
        answer,
        Some(408),
        "a body of 1,000,000 bytes at one byte a second, after {took:?}"
    );
    let admission = h.admission.clone();
    eventually(
        "the slot to be given back and the client forgotten",
        Duration::from_secs(5),
        || {
            let (free, clients) = (admission.free_slots(), admission.clients());
            async move {
                (free == WebhookLimits::default().concurrency && clients == 0).then_some(())
            }
        },
    )
    .await;
    assert_eq!(registered(&h.pool).await, untouched());
    assert_eq!(delivery_count(&h.pool).await, 0);
}
