//! The failure throttle of docs/contract.md#bounds, attacked: guessing the API token through
//! the write API and the sign-in form, from one address, from one IPv6 /64,
//! and behind forged `X-Forwarded-For` headers. Every refusal is checked
//! both for its answer and for leaving the registry and the queue alone.

use crate::support;
use crate::support::seed::Seed;

use std::net::IpAddr;
use std::time::Instant;

use axum::body::Body;
use axum::http::request::Builder;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use roster::controller::WorkQueue;
use roster::web::serve::{serve, ClientAddr};
use roster::web::throttle::{MAX_FAILURES, WINDOW};
use sqlx::PgPool;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};
use tokio::sync::oneshot;

const TOKEN: &str = "throttle-t0ken";
const REPO_RESYNC: &str = "/api/v1/repos/acme/api/resync";

const OPTIONS: Options = Options {
    api_token: Some(TOKEN),
    github_web_url: None,
};

/// A fixture with one registered repository, acme/api.
async fn fixture(trust_proxy: bool) -> Fixture {
    let f = router::fixture_tuned(
        OPTIONS,
        |_, _| {},
        |state| {
            state.trust_proxy = trust_proxy;
        },
    )
    .await;
    Seed::new(&f.pool).repo(1, "acme", "api").await;
    f
}

/// What a successful write would change: the queue, the listing request,
/// the repositories' rows.
#[derive(Debug, PartialEq, Eq)]
struct Registered {
    queued: u64,
    listing_requested: bool,
    repos: String,
}

async fn registered(f: &Fixture) -> Registered {
    Registered {
        queued: f.queue.depth().await.expect("depth"),
        listing_requested: listing_requested(&f.pool).await,
        repos: sqlx::query_scalar(
            "select string_agg(id || ' ' || status || ' ' || updated_at, ', ' order by id)
             from repositories",
        )
        .fetch_one(&f.pool)
        .await
        .expect("repositories"),
    }
}

async fn listing_requested(pool: &PgPool) -> bool {
    sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("schedule")
}

/// The fixture's router served over real TCP on 127.0.0.1; dropping it
/// stops the server.
struct Served {
    port: u16,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve_over_tcp(app: &Router) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(listener, app.clone(), async move {
        let _ = stopped.await;
    }));
    Served {
        port,
        stop: Some(stop),
    }
}

/// An HTTP client whose connections leave from one address (loopback
/// answers on all of 127/8: two source addresses, two clients).
struct Peer {
    client: Client<HttpConnector, Body>,
    port: u16,
}

impl Peer {
    fn new(served: &Served, from: [u8; 4]) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(IpAddr::from(from)));
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            port: served.port,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn send(&self, request: Builder, body: String) -> Answer {
        let request = request.body(Body::from(body)).expect("request");
        let response = self.client.request(request).await.expect("answer");
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// A write API call with `Bearer token`.
    async fn api(&self, path: &str, token: &str) -> Answer {
        self.send(bearer_post(&self.url(path), token), String::new())
            .await
    }

    /// The sign-in form, posted from the dashboard's own page.
    async fn sign_in(&self, token: &str) -> Answer {
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.url("/signin"))
            .header(header::ORIGIN, format!("http://127.0.0.1:{}", self.port))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        self.send(request, format!("token={token}")).await
    }
}

/// A POST to `uri` with `Bearer token`.
fn bearer_post(uri: &str, token: &str) -> Builder {
    Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
}

/// Asserts a 429 of the write API: `Retry-After` within the window and the
/// JSON error.
fn assert_api_locked(answer: &Answer, what: &str) {
    assert_eq!(
        answer.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{what}: {}",
        answer.body
    );
    let wait: u64 = answer
        .header(header::RETRY_AFTER)
        .parse()
        .unwrap_or_else(|e| panic!("{what}: Retry-After ({e}): {:?}", answer.headers));
    assert!((1..=WINDOW.as_secs()).contains(&wait), "{what}: {wait}");
    let error = answer.json()["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.starts_with("too many wrong tokens"),
        "{what}: {error}"
    );
}

/// Asserts a 429 of the sign-in form: its page, no cookie.
fn assert_sign_in_locked(answer: &Answer) {
    assert_eq!(
        answer.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        answer.body
    );
    assert!(!answer.header(header::RETRY_AFTER).is_empty());
    assert!(
        answer.body.contains("Too many wrong tokens"),
        "{}",
        answer.body
    );
    assert!(answer.headers.get(header::SET_COOKIE).is_none());
}

#[tokio::test]
async fn three_hundred_wrong_bearer_tokens_should_be_refused_after_ten_even_the_right_one() {
    let f = fixture(false).await;
    let served = serve_over_tcp(&f.app).await;
    let guesser = Peer::new(&served, [127, 0, 0, 1]);
    let before = registered(&f).await;

    let started = Instant::now();
    let mut answers = Vec::new();
    for n in 0..300 {
        answers.push(guesser.api(REPO_RESYNC, &format!("guess-{n}")).await);
    }
    let elapsed = started.elapsed();
    println!("300 wrong bearer tokens over TCP took {elapsed:?}");
    let (unauthorized, refused) = answers.split_at(MAX_FAILURES as usize);
    for answer in unauthorized {
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.body);
    }
    for (n, answer) in refused.iter().enumerate() {
        assert_api_locked(answer, &format!("guess {}", n + unauthorized.len()));
    }
    let right_but_locked = guesser.api(REPO_RESYNC, TOKEN).await;
    assert_api_locked(&right_but_locked, "the right token while locked");
    let all_but_locked = guesser.api("/api/v1/resync", TOKEN).await;
    assert_api_locked(&all_but_locked, "the other write route");
    assert_eq!(
        registered(&f).await,
        before,
        "refused writes change nothing"
    );

    // Another address is not locked, and the right token works there.
    let operator = Peer::new(&served, [127, 0, 0, 2]);
    let accepted = operator.api(REPO_RESYNC, TOKEN).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    assert_eq!(registered(&f).await.queued, 1);
}

#[tokio::test]
async fn the_lockout_should_be_shared_by_the_api_and_the_sign_in_form() {
    let f = fixture(false).await;
    let served = serve_over_tcp(&f.app).await;
    let before = registered(&f).await;

    // Ten wrong bearer tokens lock the sign-in form...
    let api_guesser = Peer::new(&served, [127, 0, 0, 1]);
    for n in 0..MAX_FAILURES {
        let answer = api_guesser
            .api("/api/v1/resync", &format!("guess-{n}"))
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    assert_sign_in_locked(&api_guesser.sign_in(TOKEN).await);

    // ...and ten wrong sign-ins lock the write API.
    let form_guesser = Peer::new(&served, [127, 0, 0, 2]);
    for n in 0..MAX_FAILURES {
        let answer = form_guesser.sign_in(&format!("guess-{n}")).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        assert!(answer.body.contains("That is not the API token."));
    }
    assert_sign_in_locked(&form_guesser.sign_in(TOKEN).await);
    assert_api_locked(
        &form_guesser.api("/api/v1/resync", TOKEN).await,
        "API after sign-in",
    );
    assert_api_locked(
        &form_guesser.api(REPO_RESYNC, TOKEN).await,
        "API after sign-in",
    );
    assert_eq!(
        registered(&f).await,
        before,
        "refused writes change nothing"
    );

    // A third address signs in and writes.
    let operator = Peer::new(&served, [127, 0, 0, 3]);
    assert_eq!(operator.sign_in(TOKEN).await.status, StatusCode::SEE_OTHER);
    assert_eq!(
        operator.api("/api/v1/resync", TOKEN).await.status,
        StatusCode::ACCEPTED
    );
    assert!(registered(&f).await.listing_requested);
}

/// A write API call through the router, as if from `client` over TCP.
async fn api_from(app: &Router, client: &str, token: &str) -> Answer {
    let address: IpAddr = client.parse().expect("an address");
    let request = bearer_post(REPO_RESYNC, token)
        .extension(ClientAddr(address))
        .body(Body::empty())
        .expect("request");
    send(app, request).await
}

#[tokio::test]
async fn ipv6_clients_should_be_counted_by_their_64() {
    let f = fixture(false).await;
    let before = registered(&f).await;

    // Ten addresses of one /64, each guessing once.
    for n in 1..=MAX_FAILURES {
        let answer = api_from(&f.app, &format!("2001:db8:1:2::{n:x}"), "guess").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let same_64 = api_from(&f.app, "2001:db8:1:2:ffff:ffff:ffff:ffff", TOKEN).await;
    assert_api_locked(&same_64, "another address of the /64");
    // An IPv4 client seen through a dual-stack listener is still itself.
    for _ in 0..MAX_FAILURES {
        let answer = api_from(&f.app, "::ffff:192.0.2.7", "guess").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    assert_api_locked(&api_from(&f.app, "192.0.2.7", TOKEN).await, "IPv4-mapped");
    assert_eq!(
        registered(&f).await,
        before,
        "refused writes change nothing"
    );

    let other_64 = api_from(&f.app, "2001:db8:1:3::1", TOKEN).await;
    assert_eq!(other_64.status, StatusCode::ACCEPTED, "{}", other_64.body);
    let other_v4 = api_from(&f.app, "192.0.2.8", TOKEN).await;
    assert_eq!(other_v4.status, StatusCode::ACCEPTED, "{}", other_v4.body);
}

#[tokio::test]
async fn forged_forwarded_for_headers_should_not_escape_the_lockout() {
    let f = fixture(false).await;
    let served = serve_over_tcp(&f.app).await;
    let guesser = Peer::new(&served, [127, 0, 0, 1]);
    let before = registered(&f).await;

    let forged = |n: u32, token: &str| {
        bearer_post(&guesser.url(REPO_RESYNC), token)
            .header("x-forwarded-for", format!("198.51.100.{n}"))
            .header("x-real-ip", format!("198.51.100.{n}"))
    };
    for n in 0..MAX_FAILURES {
        let answer = guesser.send(forged(n, "guess"), String::new()).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let answer = guesser.send(forged(99, TOKEN), String::new()).await;
    assert_api_locked(&answer, "a fresh forged address");
    assert_sign_in_locked(&guesser.sign_in(TOKEN).await);
    assert_eq!(
        registered(&f).await,
        before,
        "refused writes change nothing"
    );
}

#[tokio::test]
async fn a_trusted_proxy_should_key_clients_by_the_right_most_forwarded_for() {
    let f = fixture(true).await;
    let before = registered(&f).await;
    // Every request comes from the proxy; the client is what it appends.
    let via_proxy = |forwarded_for: &str, token: &str| {
        bearer_post(REPO_RESYNC, token)
            .header("x-forwarded-for", forwarded_for)
            .extension(ClientAddr(IpAddr::from([10, 0, 0, 2])))
            .body(Body::empty())
            .expect("request")
    };

    // The guesser writes a new address of its own before the proxy's entry
    // each time: only the proxy's entry counts.
    for n in 0..MAX_FAILURES {
        let request = via_proxy(&format!("198.51.100.{n}, 203.0.113.5"), "guess");
        assert_eq!(send(&f.app, request).await.status, StatusCode::UNAUTHORIZED);
    }
    let locked = send(&f.app, via_proxy("198.51.100.99, 203.0.113.5", TOKEN)).await;
    assert_api_locked(&locked, "the guesser behind the proxy");
    assert_eq!(
        registered(&f).await,
        before,
        "refused writes change nothing"
    );

    // Other clients of the same proxy are not locked out with it.
    let neighbour = send(&f.app, via_proxy("203.0.113.6", TOKEN)).await;
    assert_eq!(neighbour.status, StatusCode::ACCEPTED, "{}", neighbour.body);
}
