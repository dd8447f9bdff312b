//! Long polls benchmark, against a real PostgreSQL: many consumers wait on
//! `GET /api/v1/changes?wait=60s` over HTTP on loopback while changes are
//! written one at a time.
//! - database transactions per second while they all wait and nothing
//!   changes (from `pg_stat_database`);
//! - how long a reconcile that changes an entry takes to commit (the
//!   server's share of push → synced), with no waiter and with them all;
//! - commit → every waiter answered.
//!
//! Run with `cargo bench --bench long_polls`; `LONG_POLL_WAITERS` sets the
//! number of waiters (default 2,000). The server and the waiters share the
//! process and the machine, so figures are noisy: compare runs made one
//! after the other.

use roster_testkit::http;
use roster_testkit::registry::{handler, installed_repo, queue};

use std::time::{Duration, Instant};

use roster::controller::Handler;
use roster::registry::changes::ChangeWaker;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use roster::web::api_changes::ChangesState;
use roster::web::long_polls::LongPolls;
use roster::web::router::changes as routes;
use sqlx::PgPool;
use tokio::sync::mpsc;

const CHANGES: usize = 20;
const IDLE_WINDOW: Duration = Duration::from_secs(10);

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

fn found(round: usize) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", "app", 1),
        file: FileState::Found {
            sha: format!("{round:040x}"),
            bytes: format!("projects:\n  - name: app\n    owner: team-{round}\n").into_bytes(),
        },
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn transactions(pool: &PgPool) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "select (xact_commit + xact_rollback)::bigint from pg_stat_database
         where datname = current_database()",
    )
    .fetch_one(pool)
    .await?)
}

/// Commits `CHANGES` changes one at a time; returns each reconcile's time
/// and, when `waiters` wait, the time from its commit to the last of them
/// answered.
async fn changes(
    handler: &RegistryHandler,
    first_round: usize,
    waiters: usize,
    seen: &mut mpsc::UnboundedReceiver<(i64, Instant)>,
) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let (mut applies, mut wakes) = (Vec::new(), Vec::new());
    for n in 0..CHANGES {
        let round = first_round + n;
        let started = Instant::now();
        handler
            .apply(&RepoId(1), Ok(found(round)))
            .await
            .map_err(|f| f.message())?;
        let committed = Instant::now();
        applies.push(committed - started);
        if waiters > 0 {
            let mut answered = 0;
            let mut last = committed;
            while answered < waiters {
                let (_, at) = tokio::time::timeout(Duration::from_secs(60), seen.recv())
                    .await?
                    .ok_or("waiters gone")?;
                answered += 1;
                last = last.max(at);
            }
            wakes.push(last - committed);
        }
        // Let the waiters ask again before the next change.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    applies.sort();
    wakes.sort();
    Ok((applies, wakes))
}

async fn run() -> Result<()> {
    let waiters: usize = std::env::var("LONG_POLL_WAITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    println!("long_polls: {waiters} waiters, {CHANGES} changes one at a time");
    let (pool, _) = roster::db::testing::fresh_database().await?;
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    let waker = ChangeWaker::start(pool.clone());
    waker.listening().await;
    let (_stop, stop_rx) = roster::shutdown::channel();
    // As an operator expecting this many consumers would set
    // ROSTER_LONG_POLLS.
    let long_polls = LongPolls::new(waiters.max(1));
    let app = routes(ChangesState {
        pool: pool.clone(),
        waker,
        stop: stop_rx,
        long_polls: long_polls.clone(),
        access: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // Alone first.
    let (_none, mut unused) = mpsc::unbounded_channel::<(i64, Instant)>();
    let (alone, _) = changes(&handler, 1, 0, &mut unused).await?;
    let head = CHANGES as i64;

    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    for _ in 0..waiters {
        let (base, seen_tx) = (base.clone(), seen_tx.clone());
        tokio::spawn(async move {
            let mut cursor = head;
            loop {
                let url = format!("{base}/api/v1/changes?after={cursor}&wait=60s");
                let Ok(answer) = http::get(&url).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let at = Instant::now();
                let Ok(page) = serde_json::from_str::<serde_json::Value>(&answer.body) else {
                    continue;
                };
                let next = page["next_cursor"].as_i64().unwrap_or(cursor);
                if next > cursor && seen_tx.send((next, at)).is_err() {
                    return;
                }
                cursor = next;
            }
        });
    }
    // Every waiter connected and waiting; then an idle window.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = transactions(&pool).await?;
    let reads_before = long_polls.reads();
    let started = Instant::now();
    tokio::time::sleep(IDLE_WINDOW).await;
    let after = transactions(&pool).await?;
    let idle_reads = long_polls.reads() - reads_before;
    let idle_rate = (after - before) as f64 / started.elapsed().as_secs_f64();

    let reads_before = long_polls.reads();
    let (crowded, wakes) = changes(&handler, 1000, waiters, &mut seen).await?;
    let change_reads = long_polls.reads() - reads_before;
    println!("  transactions/s while {waiters} wait and nothing changes: {idle_rate:.0}");
    println!(
        "  feed reads: {idle_reads} in the {} s without changes, {:.0} per change after",
        IDLE_WINDOW.as_secs(),
        change_reads as f64 / CHANGES as f64
    );
    let line = |what: &str, d: &[Duration]| {
        println!(
            "  {what}: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            ms(percentile(d, 0.5)),
            ms(percentile(d, 0.9)),
            ms(percentile(d, 1.0))
        );
    };
    line("reconcile commit, no waiter        ", &alone);
    line(&format!("reconcile commit, {waiters} waiting   "), &crowded);
    line(&format!("commit → all {waiters} waiters answered"), &wakes);
    Ok(())
}
