//! A notification target on loopback: records every POST it receives
//! (headers, body, whether the signature checks out) and answers as told,
//! to stand for healthy, failing, slow, hanging or redirecting receivers.

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

/// One POST as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub delivery: String,
    pub seq: i64,
    pub signature_ok: bool,
    pub body: serde_json::Value,
    pub at: Instant,
    /// Whether it was answered 2xx.
    pub acknowledged: bool,
}

struct Inner {
    behaviour: Mutex<Behaviour>,
    secret: String,
    received: Mutex<Vec<Received>>,
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
    let expected = roster::notify::sign::signature(inner.secret.as_bytes(), &body);
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
    let record = Received {
        delivery: text("x-roster-delivery"),
        seq: text("x-roster-seq").parse().unwrap_or(-1),
        signature_ok: text("x-roster-signature-256") == expected,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
        at: Instant::now(),
        acknowledged: status.is_success(),
    };
    inner.received.lock().expect("lock").push(record);
    inner.count.send_modify(|n| *n += 1);
    if status == StatusCode::FOUND {
        return (status, [("location", "/elsewhere")]).into_response();
    }
    status.into_response()
}
