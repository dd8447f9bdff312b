//! What the GitHub benchmarks count and wait for: the requests an
//! installation used (and which kinds), a line in the server's log, and a
//! registry where every repository has a final status.

use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::fake_github::{routes, FakeGithub};
use crate::server::Roster;

type Failed = Box<dyn std::error::Error>;

/// Requests to GitHub for the installation's sake: everything but the
/// App's delivery log, which the redelivery loop reads on its own schedule.
pub fn github_requests(fake: &FakeGithub) -> u64 {
    fake.total() - fake.count(routes::HOOK_DELIVERIES) - fake.count(routes::HOOK_ATTEMPTS)
}

/// Requests about check runs (one per changed commit, which no batching
/// shares).
pub fn check_requests(fake: &FakeGithub) -> u64 {
    [
        routes::CHECK_RUN_CREATE,
        routes::CHECK_RUN_UPDATE,
        routes::CHECK_RUNS_FOR_REF,
    ]
    .iter()
    .map(|r| fake.count(r))
    .sum()
}

pub fn rest_reads(fake: &FakeGithub) -> u64 {
    [
        routes::REPO_BY_ID,
        routes::REPO,
        routes::COMMIT,
        routes::CONTENTS,
    ]
    .iter()
    .map(|r| fake.count(r))
    .sum()
}

pub use crate::bench_mode::verdict;

pub async fn wait_for_log(roster: &Roster, marker: &str, limit: Duration) -> Result<(), Failed> {
    let deadline = Instant::now() + limit;
    while !roster.logs().contains(marker) {
        if Instant::now() > deadline {
            return Err(format!("no {marker:?} in the log after {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Waits until `total` repositories are known, none pending and the queue
/// empty. Polls every 50 ms, counting repositories only once the queue is
/// empty, so that the measuring takes next to nothing from the database
/// being measured.
pub async fn settle(pool: &PgPool, total: usize, limit: Duration) -> Result<(), Failed> {
    let deadline = Instant::now() + limit;
    loop {
        let queued: bool = sqlx::query_scalar("select exists (select 1 from queue)")
            .fetch_one(pool)
            .await?;
        if !queued {
            let (pending, known): (i64, i64) = sqlx::query_as(
                "select count(*) filter (where status = 'pending'), count(*) from repositories",
            )
            .fetch_one(pool)
            .await?;
            if pending == 0 && usize::try_from(known).unwrap_or(0) == total {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("not settled after {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A fresh database for a benchmark of the real binary: when
/// `ROSTER_BENCH_BINARY` runs another build, that build migrates it to
/// its own schema, so it starts empty.
pub async fn bench_database() -> Result<(PgPool, String), Failed> {
    let (pool, url) = roster::db::testing::fresh_database().await?;
    if std::env::var_os("ROSTER_BENCH_BINARY").is_some() {
        sqlx::raw_sql("drop schema public cascade; create schema public")
            .execute(&pool)
            .await?;
    }
    Ok((pool, url))
}
