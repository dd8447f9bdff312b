//! A notification target on loopback: records every POST it receives
//! (headers, body, whether the signature checks out) and answers as told,
//! to stand for healthy, failing, slow, hanging or redirecting receivers.
//! It verifies as docs/notification-receiver.md says a receiver should:
//! the signature over delivery, timestamp and body, a timestamp at most 5
//! minutes old (401 otherwise), and each `seq` applied once (a repeat is
//! acknowledged, not applied again).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use tokio::sync::watch;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    Ok,
    /// 500 for the first `n` requests, then 200.
    FailFirst(usize),
    /// Always 500.
    Fail,
    /// 200 after a pause.
    Slow(Duration),
    /// Never answers.
    Hang,
    /// 302 to another path.
    Redirect,
}

/// Oldest `X-Roster-Timestamp` accepted, in seconds from now.
pub const MAX_AGE_SECS: i64 = 300;

/// One POST as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub delivery: String,
    pub seq: i64,
    /// `X-Roster-Timestamp` as sent.
    pub timestamp: String,
    /// `X-Roster-Signature-256` as sent.
    pub signature: String,
    /// `X-Roster-Signature-256` checks out over delivery, timestamp, body.
    pub signature_ok: bool,
    /// `X-Roster-Body-Signature-256` checks out over the body alone.
    pub body_signature_ok: bool,
    /// The timestamp is at most [`MAX_AGE_SECS`] from now.
    pub fresh: bool,
    /// The raw body.
    pub raw: Vec<u8>,
    pub body: serde_json::Value,
    pub at: Instant,
    /// Whether it was answered 2xx.
    pub acknowledged: bool,
    /// Whether its change was applied now (not a repeat, not refused).
    pub applied: bool,
}

struct Inner {
    behaviour: Mutex<Behaviour>,
    secret: String,
    received: Mutex<Vec<Received>>,
    applied: Mutex<BTreeSet<i64>>,
    count: watch::Sender<usize>,
}

/// A running receiver; it stops with the test's runtime.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inner: Arc<Inner>,
}

impl Receiver {
    pub async fn start(secret: &str, behaviour: Behaviour) -> Receiver {
        let inner = Arc::new(Inner {
            behaviour: Mutex::new(behaviour),
            secret: secret.to_owned(),
            received: Mutex::new(Vec::new()),
            applied: Mutex::new(BTreeSet::new()),
            count: watch::channel(0).0,
        });
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            inner,
        }
    }

    pub fn set(&self, behaviour: Behaviour) {
        *self.inner.behaviour.lock().expect("lock") = behaviour;
    }

    /// How many times the change `seq` was applied (once, whatever was
    /// replayed).
    pub fn applied(&self, seq: i64) -> usize {
        self.received()
            .iter()
            .filter(|r| r.applied && r.seq == seq)
            .count()
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.received.lock().expect("lock").clone()
    }

    /// The seqs acknowledged, each first time only, in arrival order.
    pub fn acknowledged_seqs(&self) -> Vec<i64> {
        let mut seen = std::collections::BTreeSet::new();
        self.received()
            .into_iter()
            .filter(|r| r.acknowledged && seen.insert(r.seq))
            .map(|r| r.seq)
            .collect()
    }

    /// Waits until `check` holds for what was received, or panics.
    pub async fn wait_until(
        &self,
        what: &str,
        limit: Duration,
        check: impl Fn(&[Received]) -> bool,
    ) {
        let mut rx = self.inner.count.subscribe();
        let waited = tokio::time::timeout(limit, async {
            loop {
                if check(&self.received()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "timed out waiting for {what}: {:?}",
            self.received()
                .iter()
                .map(|r| (r.seq, r.acknowledged))
                .collect::<Vec<_>>()
        );
    }
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let delivery = text("x-roster-delivery");
    let timestamp = text("x-roster-timestamp");
    let signature = text("x-roster-signature-256");
    let secret = inner.secret.as_bytes();
    let signature_ok = timestamp
        .parse::<i64>()
        .is_ok_and(|ts| signature == roster::notify::sign::signature(secret, &delivery, ts, &body));
    let body_signature_ok =
        text("x-roster-body-signature-256") == roster::notify::sign::body_signature(secret, &body);
    let now = chrono::Utc::now().timestamp();
    let fresh = timestamp
        .parse::<i64>()
        .is_ok_and(|ts| (now - ts).abs() <= MAX_AGE_SECS);
    let seq: i64 = text("x-roster-seq").parse().unwrap_or(-1);
    let behaviour = *inner.behaviour.lock().expect("lock");
    let earlier = inner.received.lock().expect("lock").len();
    let (status, pause) = match behaviour {
        Behaviour::Ok => (StatusCode::OK, None),
        Behaviour::FailFirst(n) if earlier < n => (StatusCode::INTERNAL_SERVER_ERROR, None),
        Behaviour::FailFirst(_) => (StatusCode::NO_CONTENT, None),
        Behaviour::Fail => (StatusCode::INTERNAL_SERVER_ERROR, None),
        Behaviour::Slow(pause) => (StatusCode::OK, Some(pause)),
        Behaviour::Hang => (StatusCode::OK, Some(Duration::from_secs(3600))),
        Behaviour::Redirect => (StatusCode::FOUND, None),
    };
    if let Some(pause) = pause {
        tokio::time::sleep(pause).await;
    }
    let status = if status.is_success() && !(signature_ok && fresh) {
        StatusCode::UNAUTHORIZED
    } else {
        status
    };
    // A repeat is acknowledged (it was applied before) but not applied.
    let applied = status.is_success() && inner.applied.lock().expect("lock").insert(seq);
    let record = Received {
        delivery,
        seq,
        timestamp,
        signature,
        signature_ok,
        body_signature_ok,
        fresh,
        raw: body.to_vec(),
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        at: Instant::now(),
        acknowledged: status.is_success(),
        applied,
    };
    inner.received.lock().expect("lock").push(record);
    inner.count.send_modify(|n| *n += 1);
    if status == StatusCode::FOUND {
        return (status, [("location", "/elsewhere")]).into_response();
    }
    status.into_response()
}
