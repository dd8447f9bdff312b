//! Outbound notifications against a real PostgreSQL and receivers on
//! loopback: signed, in `seq` order, at least once; a target that fails,
//! hangs, is slow, redirects or is unreachable is retried and delays
//! neither reconciles nor other targets; nothing is lost across a restart;
//! two replicas do not both send.

use crate::support;
use crate::support::registry::{handler, installed_repo, queue};

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use roster::controller::{Backoff, Handler};
use roster::db::testing::fresh_database;
use roster::notify::sign;
use roster::notify::{outbox, Delivery, NotifyMetrics};
use roster::registry::changes::ChangeWaker;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use secrecy::SecretString;
use sqlx::PgPool;
use support::http;
use support::receiver::{Behaviour, Received, Receiver};
use support::server::{eventually, free_port};

const SECRET: &str = "notify-secret";

fn found(repo: i64, round: usize) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", format!("app{repo}"), 7),
        file: FileState::Found {
            sha: format!("sha{round}"),
            bytes: format!("projects:\n  - name: p{repo}\n    owner: team-{round}\n").into_bytes(),
        },
    }
}

/// A delivery set-up with short timeouts and backoff, so faults show fast.
fn delivery(pool: &PgPool, waker: &ChangeWaker, owner: &str) -> Arc<Delivery> {
    delivery_with(pool, waker, owner, NotifyMetrics::default())
}

fn delivery_with(
    pool: &PgPool,
    waker: &ChangeWaker,
    owner: &str,
    metrics: NotifyMetrics,
) -> Arc<Delivery> {
    Arc::new(Delivery {
        pool: pool.clone(),
        transport: roster::notify::transport(Duration::from_millis(500)).expect("client"),
        secret: SecretString::from(SECRET),
        owner: owner.to_owned(),
        waker: waker.clone(),
        metrics,
        timeout: Duration::from_millis(500),
        lease: Duration::from_secs(5),
        backoff: Backoff {
            base: Duration::from_millis(50),
            cap: Duration::from_millis(400),
            jitter: 0.2,
        },
        encode: roster::web::json::change_body,
    })
}

struct Setup {
    pool: PgPool,
    url: String,
    handler: RegistryHandler,
    waker: ChangeWaker,
    stop: roster::shutdown::Stop,
    shutdown: roster::shutdown::Shutdown,
}

async fn setup() -> Setup {
    let (pool, url) = fresh_database().await.expect("fresh database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    let waker = ChangeWaker::start(pool.clone());
    let (stop, shutdown) = roster::shutdown::channel();
    Setup {
        pool,
        url,
        handler,
        waker,
        stop,
        shutdown,
    }
}

impl Setup {
    /// Starts delivering to `url` as replica `owner`; waits until the
    /// target is registered, so changes written after count for it.
    async fn deliver(&self, url: &str, owner: &str) -> tokio::task::JoinHandle<()> {
        let task = tokio::spawn(
            delivery(&self.pool, &self.waker, owner).run(url.to_owned(), self.shutdown.clone()),
        );
        let pool = self.pool.clone();
        eventually("the target registered", Duration::from_secs(10), || {
            let pool = pool.clone();
            async move {
                outbox::status(&pool)
                    .await
                    .ok()
                    .filter(|s| s.iter().any(|t| t.target == roster::notify::redact(url)))
            }
        })
        .await;
        task
    }

    async fn change(&self, repo: i64, round: usize) {
        self.handler
            .apply(&RepoId(repo), Ok(found(repo, round)))
            .await
            .expect("reconcile");
    }
}

fn all(n: i64) -> Vec<i64> {
    (1..=n).collect()
}

#[tokio::test]
async fn every_change_should_reach_a_target_signed_once_and_in_order() {
    let s = setup().await;
    let target = Receiver::start(SECRET, Behaviour::Ok).await;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = NotifyMetrics::register(registry.sub_registry_with_prefix("roster"));
    roster::notify::outbox::register(&s.pool, &target.url)
        .await
        .expect("register");
    tokio::spawn(
        delivery_with(&s.pool, &s.waker, "replica-a", metrics)
            .run(target.url.clone(), s.shutdown.clone()),
    );
    for repo in 1..=5 {
        s.change(repo, 1).await;
    }
    target
        .wait_until("five changes", Duration::from_secs(20), |r| r.len() >= 5)
        .await;
    let received = target.received();
    assert_eq!(received.iter().map(|r| r.seq).collect::<Vec<_>>(), all(5));
    for r in &received {
        assert!(r.signature_ok, "bad signature on {}", r.seq);
        assert_eq!(r.body["seq"], r.seq);
        assert_eq!(r.body["kind"], "created");
        assert!(r.delivery.starts_with(&format!("{}-", r.seq)));
    }
    // The cursor moves right after the 2xx.
    let pool = s.pool.clone();
    let label = roster::notify::redact(&target.url);
    eventually("the cursor at 5", Duration::from_secs(10), || {
        let (pool, label) = (pool.clone(), label.clone());
        async move {
            outbox::status(&pool)
                .await
                .ok()?
                .into_iter()
                .find(|t| t.target == label && t.cursor == 5 && t.backlog == 0)
        }
    })
    .await;
    // The gauge follows the deliveries.
    let line = format!("roster_notify_backlog{{target=\"{label}\"}} 0");
    let registry = Arc::new(registry);
    eventually("the gauge at 0", Duration::from_secs(10), || {
        let (registry, line) = (registry.clone(), line.clone());
        async move {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).ok()?;
            text.contains(&line).then_some(())
        }
    })
    .await;
}

/// Sends a captured notification again, with `timestamp` and `signature`
/// as given; the answer's status.
async fn replay(url: &str, r: &Received, timestamp: &str, signature: &str) -> u16 {
    let seq = r.seq.to_string();
    let headers = [
        ("content-type", "application/json"),
        ("x-roster-delivery", r.delivery.as_str()),
        ("x-roster-timestamp", timestamp),
        ("x-roster-signature-256", signature),
        ("x-roster-seq", seq.as_str()),
    ];
    http::send(Method::POST, url, &headers, r.raw.clone())
        .await
        .expect("the receiver answers")
        .status
        .as_u16()
}

#[tokio::test]
async fn a_replayed_notification_should_not_be_applied_again() {
    let s = setup().await;
    let target = Receiver::start(SECRET, Behaviour::Ok).await;
    let _task = s.deliver(&target.url, "replica-a").await;
    s.change(1, 1).await;
    target
        .wait_until("the change", Duration::from_secs(20), |r| !r.is_empty())
        .await;
    let captured = target.received()[0].clone();
    assert!(
        captured.signature_ok,
        "signed over delivery, timestamp, body"
    );
    assert!(
        captured.body_signature_ok,
        "the body-only signature, still sent"
    );
    assert!(captured.fresh && captured.applied);
    let sent_at: i64 = captured.timestamp.parse().expect("Unix seconds");
    assert!((chrono::Utc::now().timestamp() - sent_at).abs() <= 5);

    // Sent again as captured, three times: acknowledged, applied once.
    for _ in 0..3 {
        let status = replay(
            &target.url,
            &captured,
            &captured.timestamp,
            &captured.signature,
        )
        .await;
        assert_eq!(status, 200);
    }
    assert_eq!(target.applied(captured.seq), 1);

    // A receiver that has not applied it (a new one, say) refuses the same
    // request once it is older than 5 minutes, and a newer timestamp
    // without the secret to sign it.
    let fresh = Receiver::start(SECRET, Behaviour::Ok).await;
    let old = sent_at - 360;
    let old_signature = sign::signature(SECRET.as_bytes(), &captured.delivery, old, &captured.raw);
    assert_eq!(
        replay(&fresh.url, &captured, &old.to_string(), &old_signature).await,
        401
    );
    // A minute later, still fresh: only the signature can refuse it.
    let now = (sent_at + 60).to_string();
    assert_eq!(
        replay(&fresh.url, &captured, &now, &captured.signature).await,
        401
    );
    let body_only = sign::body_signature(SECRET.as_bytes(), &captured.raw);
    assert_eq!(replay(&fresh.url, &captured, &now, &body_only).await, 401);
    assert_eq!(fresh.applied(captured.seq), 0);
    // The very request, within its 5 minutes, is taken: the refusals were
    // for age and signature alone.
    assert_eq!(
        replay(
            &fresh.url,
            &captured,
            &captured.timestamp,
            &captured.signature
        )
        .await,
        200
    );
    assert_eq!(fresh.applied(captured.seq), 1);
}

#[tokio::test]
async fn failing_slow_hanging_redirecting_and_unreachable_targets_should_not_delay_others() {
    let s = setup().await;
    let healthy = Receiver::start(SECRET, Behaviour::Ok).await;
    let flaky = Receiver::start(SECRET, Behaviour::FailFirst(3)).await;
    let slow = Receiver::start(SECRET, Behaviour::Slow(Duration::from_millis(200))).await;
    let hanging = Receiver::start(SECRET, Behaviour::Hang).await;
    let redirecting = Receiver::start(SECRET, Behaviour::Redirect).await;
    let unreachable = format!("http://127.0.0.1:{}/hook", free_port());
    for url in [
        &healthy.url,
        &flaky.url,
        &slow.url,
        &hanging.url,
        &redirecting.url,
        &unreachable,
    ] {
        s.deliver(url, "replica-a").await;
    }

    let started = Instant::now();
    for repo in 1..=4 {
        s.change(repo, 1).await;
    }
    // Reconciles never wait for a target.
    let reconciles = started.elapsed();
    healthy
        .wait_until("the healthy target", Duration::from_secs(10), |r| {
            r.len() >= 4
        })
        .await;
    let healthy_done = started.elapsed();
    assert!(reconciles < Duration::from_secs(5), "{reconciles:?}");
    // A hanging target times out after 0.5 s per attempt and backs off;
    // the healthy one does not wait for any of that.
    assert!(healthy_done < Duration::from_secs(5), "{healthy_done:?}");
    assert_eq!(healthy.acknowledged_seqs(), all(4));

    // The flaky one gets everything in order once it recovers; the retried
    // change carries the same delivery id every time.
    flaky
        .wait_until("the flaky target", Duration::from_secs(20), |r| {
            r.iter().filter(|r| r.acknowledged).count() >= 4
        })
        .await;
    assert_eq!(flaky.acknowledged_seqs(), all(4));
    let first: Vec<_> = flaky
        .received()
        .into_iter()
        .filter(|r| r.seq == 1)
        .collect();
    assert_eq!(first.len(), 4, "three 500s then a 2xx for seq 1");
    assert!(first.iter().all(|r| r.delivery == first[0].delivery));
    slow.wait_until("the slow target", Duration::from_secs(20), |r| r.len() >= 4)
        .await;
    assert_eq!(slow.acknowledged_seqs(), all(4));

    // The others show their backlog and why.
    for (url, says) in [
        (&hanging.url, "no answer within"),
        (&redirecting.url, "redirects are not followed"),
        (&unreachable, "cannot send"),
    ] {
        let pool = s.pool.clone();
        let target = roster::notify::redact(url);
        let status = eventually("the error shown", Duration::from_secs(20), || {
            let (pool, target) = (pool.clone(), target.clone());
            async move {
                outbox::status(&pool)
                    .await
                    .ok()?
                    .into_iter()
                    .find(|t| t.target == target && t.attempts >= 2)
            }
        })
        .await;
        assert_eq!((status.backlog, status.cursor), (4, 0), "{url}");
        let error = status.last_error.unwrap_or_default();
        assert!(error.contains(says), "{url}: {error}");
    }
    assert!(redirecting.received().iter().all(|r| r.seq == 1));
}

#[tokio::test]
async fn nothing_should_be_lost_when_the_notifier_stops_and_another_takes_over() {
    let s = setup().await;
    let target = Receiver::start(SECRET, Behaviour::Fail).await;
    let first = s.deliver(&target.url, "replica-a").await;
    for repo in 1..=3 {
        s.change(repo, 1).await;
    }
    target
        .wait_until("a failed attempt", Duration::from_secs(10), |r| {
            !r.is_empty()
        })
        .await;
    // Stop the first replica (it gives the lease up), while the target
    // still fails; then the target recovers and a new process takes over.
    s.stop.stop();
    first.await.expect("first stops");
    target.set(Behaviour::Ok);
    s.change(4, 1).await;
    let (stop, stop_rx) = roster::shutdown::channel();
    let pool_b = roster::db::connect_and_migrate(&s.url).await.expect("pool");
    let waker_b = ChangeWaker::start(pool_b.clone());
    let second =
        tokio::spawn(delivery(&pool_b, &waker_b, "replica-b").run(target.url.clone(), stop_rx));
    target
        .wait_until("every change", Duration::from_secs(20), |r| {
            r.iter().filter(|r| r.acknowledged).count() >= 4
        })
        .await;
    assert_eq!(target.acknowledged_seqs(), all(4));
    stop.stop();
    second.await.expect("second stops");
}

#[tokio::test]
async fn two_replicas_should_not_both_send_a_change() {
    let s = setup().await;
    let target = Receiver::start(SECRET, Behaviour::Ok).await;
    let pool_b = roster::db::connect_and_migrate(&s.url).await.expect("pool");
    let waker_b = ChangeWaker::start(pool_b.clone());
    s.deliver(&target.url, "replica-a").await;
    let _b = tokio::spawn(
        delivery(&pool_b, &waker_b, "replica-b").run(target.url.clone(), s.shutdown.clone()),
    );
    for round in 1..=5 {
        for repo in 1..=4 {
            s.change(repo, round).await;
        }
    }
    target
        .wait_until("twenty changes", Duration::from_secs(20), |r| r.len() >= 20)
        .await;
    // Give a double send every chance to show before counting.
    s.change(99, 1).await;
    target
        .wait_until("the last change", Duration::from_secs(20), |r| {
            r.len() >= 21
        })
        .await;
    let seqs: Vec<i64> = target.received().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, all(21), "each change exactly once, in order");
}
