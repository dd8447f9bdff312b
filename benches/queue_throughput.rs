//! How fast the PostgreSQL queue moves ids, next to what the same server
//! does with the simplest comparable write (pgbench, one upsert per
//! transaction). Run with `cargo bench --bench queue_throughput`; needs the
//! server of `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`)
//! and `pgbench` on `PATH` or under `/usr/lib/postgresql/*/bin`.
//!
//! `cargo bench --bench queue_throughput -- --claim-done=URL` measures only
//! claim + done as the workers do it (batches of up to [`CLAIM_BATCH`]), on
//! the database at URL (migrated, nothing queued), and prints
//! `claim_done_ids_per_second=N`: `scripts/bench-peers` sets it beside
//! another queue measured in the same run, on its own scratch database.

use roster_testkit::registry::queue;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use roster::controller::{Enqueue, WorkQueue};
use roster::db::connect_and_migrate;
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::source::RepoId;
use tokio::task::JoinSet;

use roster_testkit::pgbench;

const IDS: u32 = 10_000;
const WORKERS: u32 = 8;
const BATCH: u32 = 500;
/// How many ids a worker claims at once (`ROSTER_BATCH_SIZE`'s default).
const CLAIM_BATCH: usize = 100;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this
    // binary without it, and the figures only mean something in release.
    if !roster_testkit::bench_mode::full() {
        println!("skipped: run with `cargo bench`");
        return Ok(());
    }
    let claim_done_on =
        std::env::args().find_map(|a| a.strip_prefix("--claim-done=").map(str::to_owned));
    if let Some(url) = claim_done_on {
        let pool = connect_and_migrate(&url)
            .await
            .context("the database of --claim-done")?;
        let queue = queue(&pool);
        if queue.depth().await? != 0 {
            bail!("the database of --claim-done already holds queued ids");
        }
        enqueue_in_batches(&queue).await?;
        let rate = drain(&queue, CLAIM_BATCH).await?;
        println!("claim_done_ids_per_second={rate:.0}");
        return Ok(());
    }
    let (pool, url) = fresh_database()
        .await
        .context("creating a fresh database")?;
    let queue = queue(&pool);
    println!("queue throughput: {IDS} ids, {WORKERS} concurrent clients, database {url}");

    let enqueue_rate = enqueue_one_by_one(&queue).await?;
    println!("  enqueue, one id per call:        {enqueue_rate:>10.0} ids/s");
    let drain_rate = drain(&queue, 1).await?;
    println!("  claim + done, one id at a time:  {drain_rate:>10.0} ids/s");

    let batch_rate = enqueue_in_batches(&queue).await?;
    println!("  enqueue, {BATCH} ids per call:      {batch_rate:>10.0} ids/s");
    let batched_drain = drain(&queue, CLAIM_BATCH).await?;
    println!("  claim + done, {CLAIM_BATCH} ids at a time: {batched_drain:>10.0} ids/s");

    let tps = pgbench::upserts_per_second(&pool, &url, WORKERS).await?;
    println!(
        "pgbench: one upsert per transaction, {WORKERS} clients, {} s",
        pgbench::SECONDS
    );
    println!("  pgbench:                         {tps:>10.0} tps");
    println!("ratio of queue ops/s to pgbench tps:");
    println!(
        "  enqueue, one id per call:        {:>10.2}",
        enqueue_rate / tps
    );
    println!(
        "  claim + done (two statements):   {:>10.2}",
        drain_rate / tps
    );
    println!(
        "  claim + done, {CLAIM_BATCH} at a time:    {:>10.2}",
        batched_drain / tps
    );
    Ok(())
}

/// Enqueues every id with its own call, as webhooks do, from `WORKERS` tasks.
async fn enqueue_one_by_one(queue: &Arc<PgQueue>) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for w in 0..WORKERS {
        let queue = Arc::clone(queue);
        tasks.spawn(async move {
            for n in (w..IDS).step_by(WORKERS as usize) {
                queue.enqueue(vec![Enqueue::fresh(RepoId::from(n))]).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    let rate = f64::from(IDS) / started.elapsed().as_secs_f64();
    let depth = queue.depth().await?;
    if depth != u64::from(IDS) {
        bail!("expected {IDS} queued ids, found {depth}");
    }
    Ok(rate)
}

/// Enqueues every id, `BATCH` per call, as the listing does; ids per second.
async fn enqueue_in_batches(queue: &PgQueue) -> anyhow::Result<f64> {
    let started = Instant::now();
    for first in (0..IDS).step_by(BATCH as usize) {
        let items = (first..first + BATCH)
            .map(|n| Enqueue::fresh(RepoId::from(n)))
            .collect();
        queue.enqueue(items).await?;
    }
    Ok(f64::from(IDS) / started.elapsed().as_secs_f64())
}

/// `WORKERS` tasks claim and finish ids, up to `batch` per claim, until
/// none is left; ids per second.
async fn drain(queue: &Arc<PgQueue>, batch: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for w in 0..WORKERS {
        let queue = Arc::clone(queue);
        tasks.spawn(async move {
            let name = format!("bench-{w}");
            let mut handled = 0u64;
            loop {
                let claims = queue.claim_many(&name, batch).await?;
                if claims.is_empty() {
                    break;
                }
                queue.done_many(&claims).await?;
                handled += claims.len() as u64;
            }
            anyhow::Ok(handled)
        });
    }
    let mut handled = 0;
    while let Some(joined) = tasks.join_next().await {
        handled += joined??;
    }
    let rate = handled as f64 / started.elapsed().as_secs_f64();
    if handled != u64::from(IDS) || queue.depth().await? != 0 {
        bail!("expected to handle {IDS} ids, handled {handled}");
    }
    Ok(rate)
}
