//! Webhook intake rate: signed `push` deliveries per second that the real
//! webhook route verifies, records and enqueues (answering 202), with 8
//! concurrent senders over HTTP, next to pgbench doing one upsert per
//! transaction on the same server in the same run.
//! Run: `cargo bench --bench webhook_intake` (needs PostgreSQL, as the tests).

use roster_testkit::registry::queue;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Body;
use axum::http::Request;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use roster::intake::signature::sign;
use roster::intake::{WebhookLimits, WebhookState};
use roster::metrics::Metrics;
use roster::web::router::webhook as router;

const SENDERS: u32 = 8;
const SECRET: &str = "bench-secret";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let full = roster_testkit::bench_mode::full();
    let run_for = if full {
        Duration::from_secs(10)
    } else {
        Duration::from_millis(300)
    };
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .context("database")?;
    let metrics = Arc::new(Metrics::new(
        &mut prometheus_client::registry::Registry::default(),
    ));
    let state = WebhookState {
        pool: pool.clone(),
        queue: queue(&pool),
        secret: SECRET.to_owned().into(),
        metrics,
        limits: WebhookLimits::default(),
        free_pushes: None,
        shutdown: roster::shutdown::channel().1,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, router(state)).await });

    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/github/webhooks/push.default-branch-no-username-committer.json"
    ))?;
    let template: serde_json::Value = serde_json::from_str(&fixture)?;
    let accepted = Arc::new(AtomicU64::new(0));
    let sequence = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (accepted, sequence, template) = (accepted.clone(), sequence.clone(), template.clone());
        senders.push(tokio::spawn(async move {
            let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
            while started.elapsed() < run_for {
                let n = sequence.fetch_add(1, Ordering::Relaxed);
                let mut body = template.clone();
                // A different repository each time: nothing is deduplicated.
                body["repository"]["id"] = serde_json::json!(1_000_000 + n);
                body["repository"]["name"] = serde_json::json!(format!("repo-{n}"));
                let bytes = serde_json::to_vec(&body)?;
                let req = Request::post(format!("http://{address}/webhooks/github"))
                    .header("content-type", "application/json")
                    .header("x-github-event", "push")
                    .header("x-github-delivery", format!("bench-{n}"))
                    .header("x-hub-signature-256", sign(SECRET, &bytes))
                    .body(Body::from(bytes))?;
                let res = client.request(req).await?;
                anyhow::ensure!(res.status() == 202, "answered {}", res.status());
                accepted.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for s in senders {
        s.await??;
    }
    let rate = accepted.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM queue")
        .fetch_one(&pool)
        .await?;
    println!(
        "webhook intake: {SENDERS} senders, {:.1} s, each delivery recorded and enqueued",
        run_for.as_secs_f64()
    );
    println!("  accepted (202):                  {rate:>10.0} deliveries/s ({queued} ids queued)");
    if !full {
        println!("(smoke run; `cargo bench` also runs pgbench for comparison)");
        return Ok(());
    }
    let tps = roster_testkit::pgbench::upserts_per_second(&pool, &url, SENDERS).await?;
    println!("  pgbench, one upsert per txn:     {tps:>10.0} tps");
    println!("  ratio intake / pgbench:          {:>10.2}", rate / tps);
    Ok(())
}
