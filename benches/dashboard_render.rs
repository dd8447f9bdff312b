//! Server time and weight of the dashboard's busiest pages for a large
//! organisation: 10,000 repositories and 10,000 entries. Each page is
//! requested 50 times through the real router (no network); the median
//! time and the page size in bytes are printed.
//!
//! Run with `cargo bench --bench dashboard_render`; needs the server of
//! `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! Without `--bench`, or with `ROSTER_BENCH_SMOKE=1`, a smoke run seeds
//! 200 repositories.

use roster_testkit::bench_mode;
use roster_testkit::registry::queue;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use futures_util::{stream, StreamExt};
use prometheus_client::registry::Registry;
use roster::db::testing::fresh_database;
use roster::metrics::Metrics;
use roster::web::{router, AppState};
use roster_testkit::seed::Seed;
use sqlx::PgPool;
use tower::ServiceExt;

/// Requests of each page (a fifth in a `ROSTER_BENCH_SMOKE=1` run).
const REQUESTS: usize = 50;
/// Repositories seeded at once.
const SEEDERS: usize = 8;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let repos: i64 = if bench_mode::full() { 10_000 } else { 200 };
    let requests = if bench_mode::tiny() {
        REQUESTS / 5
    } else {
        REQUESTS
    };
    bench_mode::announce("dashboard_render");
    let (pool, url) = fresh_database()
        .await
        .context("creating a fresh database")?;
    let started = Instant::now();
    seed(&pool, repos).await?;
    println!(
        "dashboard render: {repos} repositories, {repos} entries (seeded in {:.1} s), database {url}",
        started.elapsed().as_secs_f64()
    );
    let app = app(pool);
    println!("  {requests} requests each, median server time, page weight:");
    for uri in [
        "/".to_owned(),
        "/projects".to_owned(),
        "/?status=error".to_owned(),
        "/?q=repo-09".to_owned(),
        format!("/repos/acme/repo-{:05}", repos / 2),
    ] {
        let (median, bytes) = measure(&app, &uri, requests).await?;
        println!(
            "  {uri:<24} {:>8.2} ms {:>10} bytes",
            median.as_secs_f64() * 1000.0,
            bytes
        );
    }
    Ok(())
}

/// One entry per repository; every 20th repository in `error`, every 50th
/// `invalid`, the rest `synced`, so the overview shows all three. Each is
/// reconciled as a server would, [`SEEDERS`] at a time.
async fn seed(pool: &PgPool, repos: i64) -> anyhow::Result<()> {
    let seed = Seed::new(pool);
    stream::iter(1..=repos)
        .for_each_concurrent(SEEDERS, |n| seed_repo(&seed, n))
        .await;
    sqlx::query("analyze").execute(pool).await?;
    Ok(())
}

/// Repository `n` and its one project.
async fn seed_repo(seed: &Seed, n: i64) {
    let file = format!(
        "name: project-{n:05}
owner: team-{}
description: Service number {n} of the shop, with a description of ordinary length
lifecycle: production
tags: [tag-{}, shop]
links:
  - title: Runbook
    url: https://runbooks.example.com/{n}
labels:
  tier: \"{}\"
",
        n % 40,
        n % 30,
        n % 3
    );
    let repo = seed.repo(n, "acme", &format!("repo-{n:05}")).await;
    let repo = repo.synced(&format!("{n:040x}"), &file).await;
    if n % 20 == 0 {
        repo.failed("GitHub answered 502 Bad Gateway").await;
    } else if n % 50 == 1 {
        repo.invalid("project.yaml:3:8: owner: must not be empty")
            .await;
    }
}

fn app(pool: PgPool) -> Router {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    metrics.rate_limit_remaining(roster::source::InstallationId(1), 4_800);
    router(AppState {
        pool: pool.clone(),
        queue: queue(&pool),
        metrics: Arc::new(metrics),
        registry: Arc::new(registry),
        api_token: None,
        github_web_url: Some("https://github.com".to_owned()),
        project_file: "project.yaml".to_owned(),
        resync_interval: Duration::from_secs(3600),
        auth_throttle: Default::default(),
        trust_proxy: false,
        relations: roster::project::relations::RelationsMode::default(),
        graph_reads: Default::default(),
    })
}

/// The median time of `requests` requests of `uri` (after one warm-up)
/// and the size of the page.
async fn measure(app: &Router, uri: &str, requests: usize) -> anyhow::Result<(Duration, usize)> {
    let mut times = Vec::with_capacity(requests);
    let mut bytes = 0;
    for round in 0..=requests {
        let started = Instant::now();
        let response = app
            .clone()
            .oneshot(Request::get(uri).body(Body::empty())?)
            .await?;
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
        let elapsed = started.elapsed();
        ensure!(status == StatusCode::OK, "{uri} answered {status}");
        bytes = body.len();
        if round > 0 {
            times.push(elapsed);
        }
    }
    times.sort();
    Ok((times[times.len() / 2], bytes))
}
