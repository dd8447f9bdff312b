//! Change log benchmark, against a real PostgreSQL:
//! - what the log adds to a full sync of 10,000 repositories (one entry
//!   each, all created): wall time with and without the log, alternated in
//!   one run, 8 concurrent reconcilers;
//! - how fast one consumer reads the feed over HTTP in pages of 1,000, next
//!   to the rate at which the sync produced the changes;
//! - change committed → seen by a consumer long-polling over HTTP, and →
//!   received by a notification target on loopback, p50/p99 over 300
//!   changes made one at a time.
//!
//! Run with `cargo bench --bench change_feed`.

use roster_testkit::http;
use roster_testkit::receiver;
use roster_testkit::registry::{self, installed_repo};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use roster::controller::Handler;
use roster::notify::{outbox, Delivery, NotifyMetrics};
use roster::registry::changes::ChangeWaker;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use roster::web::api_changes::ChangesState;
use roster::web::router::changes as routes;
use secrecy::SecretString;
use sqlx::PgPool;

const REPOS: i64 = 10_000;
const RECONCILERS: i64 = 8;
const SAMPLES: usize = 300;
const SECRET: &str = "bench-secret";

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    if !roster_testkit::bench_mode::full() {
        println!("skipped: run with `cargo bench`");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

fn found(id: i64, round: usize) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", format!("service-{id:05}"), 1),
        file: FileState::Found {
            sha: format!("{round:040x}"),
            bytes: format!(
                "projects:\n  - name: service-{id:05}\n    owner: team-{}\n    tags: [bench]\n",
                round
            )
            .into_bytes(),
        },
    }
}

fn handler(pool: &PgPool, log: bool) -> Arc<RegistryHandler> {
    let handler = registry::handler(pool, registry::queue(pool));
    Arc::new(if log {
        handler
    } else {
        handler.without_change_log()
    })
}

/// Every repository reconciled once, by concurrent reconcilers.
async fn full_sync(handler: &Arc<RegistryHandler>, round: usize) -> Result<Duration> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..RECONCILERS)
        .map(|worker| {
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut id = worker + 1;
                while id <= REPOS {
                    handler
                        .apply(&RepoId(id), Ok(found(id, round)))
                        .await
                        .map_err(|f| f.message())?;
                    id += RECONCILERS;
                }
                Ok::<_, String>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn run() -> Result<()> {
    println!("change_feed: {REPOS} repositories, {RECONCILERS} concurrent reconcilers");

    // 1. The log's cost in a full sync, alternated to share the noise.
    let mut times: BTreeMap<bool, Vec<Duration>> = BTreeMap::new();
    let mut again: BTreeMap<bool, Vec<Duration>> = BTreeMap::new();
    let mut logged_pool = None;
    for _trial in 0..2 {
        for log in [false, true] {
            let (pool, _) = roster::db::testing::fresh_database().await?;
            let took = full_sync(&handler(&pool, log), 1).await?;
            times.entry(log).or_default().push(took);
            // The same files again: nothing changes, nothing is logged.
            let took = full_sync(&handler(&pool, log), 1).await?;
            again.entry(log).or_default().push(took);
            if log {
                logged_pool = Some(pool);
            }
        }
    }
    let best = |log: bool| times[&log].iter().min().copied().unwrap_or_default();
    let (without, with) = (best(false), best(true));
    println!("  full sync, first (every entry created), best of 2:");
    println!(
        "    without the log: {:.2} s   runs: {:?}",
        without.as_secs_f64(),
        times[&false]
    );
    println!(
        "    with the log:    {:.2} s   runs: {:?}   (+{:.1} %)",
        with.as_secs_f64(),
        times[&true],
        (with.as_secs_f64() / without.as_secs_f64() - 1.0) * 100.0
    );
    let best_again = |log: bool| again[&log].iter().min().copied().unwrap_or_default();
    let (without_again, with_again) = (best_again(false), best_again(true));
    println!("  full sync again, no entry changes, best of 2:");
    println!(
        "    without the log: {:.2} s   with the log: {:.2} s   (+{:.1} %)",
        without_again.as_secs_f64(),
        with_again.as_secs_f64(),
        (with_again.as_secs_f64() / without_again.as_secs_f64() - 1.0) * 100.0
    );
    let pool = logged_pool.ok_or("no logged run")?;
    let produced = REPOS as f64 / with.as_secs_f64();
    println!("    reconcile rate producing changes: {produced:.0} changes/s");

    // The feed and a target on loopback.
    let waker = ChangeWaker::start(pool.clone());
    waker.listening().await;
    let (_stop, stop_rx) = roster::shutdown::channel();
    let app = routes(ChangesState {
        pool: pool.clone(),
        waker: waker.clone(),
        stop: stop_rx.clone(),
        long_polls: Default::default(),
        access: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // 2. One consumer reading the 10,000 changes in pages of 1,000.
    let started = Instant::now();
    let mut cursor = 0i64;
    while cursor < REPOS {
        let page = http::get(&format!("{base}/api/v1/changes?after={cursor}&limit=1000"))
            .await?
            .json();
        cursor = page["next_cursor"].as_i64().ok_or("no cursor")?;
    }
    let read = started.elapsed();
    println!(
        "  feed to one consumer (HTTP, limit=1000): {:.0} changes/s ({REPOS} in {:.2} s)",
        REPOS as f64 / read.as_secs_f64(),
        read.as_secs_f64()
    );

    // 3. and 4. Latency, one change at a time.
    let target = receiver::Receiver::start(SECRET, receiver::Behaviour::Ok).await;
    outbox::register(&pool, &target.url).await?;
    let delivery = Arc::new(Delivery {
        pool: pool.clone(),
        transport: roster::notify::transport(roster::notify::TIMEOUT)?,
        secret: SecretString::from(SECRET),
        owner: "bench".to_owned(),
        waker: waker.clone(),
        metrics: NotifyMetrics::default(),
        timeout: roster::notify::TIMEOUT,
        lease: Duration::from_secs(60),
        backoff: roster::controller::Backoff::default(),
        encode: roster::web::json::change_body,
    });
    tokio::spawn(delivery.run(target.url.clone(), stop_rx));

    let seen: Arc<Mutex<BTreeMap<i64, Instant>>> = Arc::default();
    let consumer = {
        let (seen, base) = (seen.clone(), base.clone());
        tokio::spawn(async move {
            let mut cursor = REPOS;
            while cursor < REPOS + SAMPLES as i64 {
                let url = format!("{base}/api/v1/changes?after={cursor}&wait=20s");
                let Ok(answer) = http::get(&url).await else {
                    continue;
                };
                let now = Instant::now();
                let page = answer.json();
                for item in page["items"].as_array().cloned().unwrap_or_default() {
                    if let Some(seq) = item["seq"].as_i64() {
                        seen.lock().map(|mut s| s.insert(seq, now)).ok();
                    }
                }
                cursor = page["next_cursor"].as_i64().unwrap_or(cursor);
            }
        })
    };
    let writer = handler(&pool, true);
    let mut committed = BTreeMap::new();
    for n in 0..SAMPLES {
        let id = (n as i64 % 100) + 1;
        writer
            .apply(&RepoId(id), Ok(found(id, 1000 + n)))
            .await
            .map_err(|f| f.message())?;
        committed.insert(REPOS + n as i64 + 1, Instant::now());
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    consumer.await?;
    target
        .wait_until("every change", Duration::from_secs(60), |r| {
            r.len() >= SAMPLES
        })
        .await;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let received: BTreeMap<i64, Instant> = target
        .received()
        .into_iter()
        .map(|r| (r.seq, r.at))
        .collect();
    let lag = |at: &BTreeMap<i64, Instant>| {
        let mut lags: Vec<Duration> = committed
            .iter()
            .filter_map(|(seq, t)| at.get(seq).map(|s| s.saturating_duration_since(*t)))
            .collect();
        lags.sort();
        lags
    };
    let (poll, notify) = (lag(&seen), lag(&received));
    println!(
        "  committed → seen, {SAMPLES} changes one at a time (from the writer's commit returning):"
    );
    println!(
        "    long-polling consumer:       p50 {:.1} ms, p99 {:.1} ms ({} samples)",
        ms(percentile(&poll, 0.5)),
        ms(percentile(&poll, 0.99)),
        poll.len()
    );
    println!(
        "    notification target (POST):  p50 {:.1} ms, p99 {:.1} ms ({} samples)",
        ms(percentile(&notify, 0.5)),
        ms(percentile(&notify, 0.99)),
        notify.len()
    );
    if poll.len() != SAMPLES || notify.len() != SAMPLES {
        return Err("a change was not seen".into());
    }
    Ok(())
}
