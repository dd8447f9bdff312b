//! The Backstage export of a large registry: 10,000 projects (100
//! repositories of 100 projects each, on GitHub) read through the real
//! router (no network), the body taken frame by frame as a catalog reads it.
//! - the peak resident size while the whole export is written, above the
//!   size before it (the export is streamed: it must grow by under 20 MiB,
//!   whatever the registry's size), beside the body's size;
//! - the time of a full export and of a `304` to a matching `If-None-Match`;
//! - the size and time of a full export gzipped (`Accept-Encoding: gzip`);
//! - the rows of `entries` each reads (from `pg_stat_user_tables`, read once
//!   the server's connections are closed, so their counts are flushed): a
//!   `304` must read none.
//!
//! Run with `cargo bench --bench backstage_export`; needs the server of
//! `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! Without `--bench`, a smoke run seeds 1,000 projects; with
//! `ROSTER_BENCH_SMOKE=1` (`scripts/bench-smoke`), 200 and polls 100 times.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use futures_util::{stream, StreamExt};
use http_body_util::BodyExt;
use roster::db::testing::fresh_database;
use roster_testkit::bench_mode;
use roster_testkit::registry::{github_repo, queue};
use roster_testkit::router::{app_on, Options};
use roster_testkit::seed::Seed;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tower::ServiceExt;

/// Projects per repository: the most one file may declare.
const PER_REPO: usize = 100;
/// Conditional requests answered 304 (a tenth in a `ROSTER_BENCH_SMOKE=1`
/// run).
const POLLS: usize = 1_000;
const MIB: f64 = 1024.0 * 1024.0;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (repos, polls) = if bench_mode::full() {
        (100, POLLS)
    } else if bench_mode::tiny() {
        (2, POLLS / 10)
    } else {
        (10, POLLS)
    };
    bench_mode::announce("backstage_export");
    let (pool, url) = fresh_database()
        .await
        .context("creating a fresh database")?;
    let started = Instant::now();
    seed(&pool, repos).await?;
    println!(
        "backstage export: {} projects in {repos} repositories (seeded in {:.1} s)",
        repos * PER_REPO,
        started.elapsed().as_secs_f64()
    );
    // The seeding's connections end here, flushing their counts of rows
    // read; the counts below come from the phases alone.
    pool.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await?;

    // A full export, after one to warm up.
    let ((tag, (bytes, elapsed, grown)), reads) = phase(&pool, &url, |app| async move {
        let (_, tag, _) = export(&app, None, false).await?;
        roster::memory::trim();
        reset_peak()?;
        let before = rss_kib("VmRSS")?;
        let (bytes, _, elapsed) = export(&app, None, false).await?;
        let grown = (rss_kib("VmHWM")? - before) as f64 / 1024.0;
        Ok((tag, (bytes, elapsed, grown)))
    })
    .await?;
    println!(
        "  full export: {:.1} MiB in {:.0} ms; peak RSS grew by {grown:.1} MiB{} {}",
        bytes as f64 / MIB,
        elapsed.as_secs_f64() * 1000.0,
        bench_mode::target("under 20 MiB"),
        bench_mode::verdict(grown < 20.0),
    );
    // The warm-up and the measured export: two exports.
    println!("    rows of entries read per export: {}", reads / 2);

    // The same export gzipped, as a catalog that accepts it reads it.
    let ((zipped, zipped_in), _) = phase(&pool, &url, |app| async move {
        let (zipped, _, elapsed) = export(&app, None, true).await?;
        Ok((zipped, elapsed))
    })
    .await?;
    println!(
        "  gzipped export: {:.2} MiB ({:.1} % of {:.1} MiB) in {:.0} ms",
        zipped as f64 / MIB,
        zipped as f64 * 100.0 / bytes as f64,
        bytes as f64 / MIB,
        zipped_in.as_secs_f64() * 1000.0,
    );

    // Polls whose ETag still matches.
    let (times, reads) = phase(&pool, &url, |app| async move {
        let mut times = Vec::with_capacity(polls);
        for _ in 0..polls {
            let started = Instant::now();
            let status = conditional(&app, &tag).await?;
            times.push(started.elapsed());
            ensure!(
                status == StatusCode::NOT_MODIFIED,
                "a poll answered {status}"
            );
        }
        times.sort();
        Ok(times)
    })
    .await?;
    println!(
        "  {polls} polls answered 304: median {:.2} ms, p99 {:.2} ms; rows of entries read: {reads}{} {}",
        ms(times[polls / 2]),
        ms(times[polls * 99 / 100]),
        bench_mode::target("0"),
        bench_mode::verdict(reads == 0),
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `repos` GitHub repositories of [`PER_REPO`] projects each.
async fn seed(pool: &PgPool, repos: usize) -> anyhow::Result<()> {
    let seed = Seed::new(pool);
    stream::iter(1..=repos)
        .for_each_concurrent(4, |r| {
            let seed = &seed;
            async move {
                let mut file = String::from("projects:\n");
                for p in 0..PER_REPO {
                    file.push_str(&format!(
                        "  - name: svc-{r:03}-{p:03}
    owner: team-{}
    description: Service {p} of repository {r}, with a description of ordinary length
    lifecycle: production
    tags: [tag-{}, shop]
    links:
      - title: Runbook
        url: https://runbooks.example.com/{r}/{p}
      - title: Dashboard
        url: https://grafana.example.com/d/{r}-{p}
",
                        p % 40,
                        p % 30,
                    ));
                }
                seed.repo_as(r as i64, github_repo("acme", format!("repo-{r:03}"), 1))
                    .await
                    .synced(&format!("{r:040x}"), &file)
                    .await;
            }
        })
        .await;
    sqlx::query("analyze").execute(pool).await?;
    Ok(())
}

/// Runs `work` against a router on connections of its own, then closes
/// them and returns what `work` gave with the rows of `entries` read
/// meanwhile.
async fn phase<T, F, Fut>(pool: &PgPool, url: &str, work: F) -> anyhow::Result<(T, i64)>
where
    F: FnOnce(Router) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let before = entries_read(pool).await?;
    let options: PgConnectOptions = url.parse()?;
    let server = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options.application_name(PHASE))
        .await?;
    let app = app_on(
        &server,
        &queue(&server),
        Options {
            api_token: None,
            github_web_url: Some("https://github.com"),
        },
        |_, _| {},
        |_| {},
    );
    let result = work(app).await?;
    server.close().await;
    let after = entries_read(pool).await?;
    Ok((result, after - before))
}

/// What the phases' connections call themselves, so that the count below
/// waits for theirs alone (the seeding's idle connections stay open).
const PHASE: &str = "backstage-export-phase";

/// Rows of `entries` read so far, once the phases' connections have ended
/// (a backend flushes its counts as it exits).
async fn entries_read(pool: &PgPool) -> anyhow::Result<i64> {
    let mut conn = pool.acquire().await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let others: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity
             where datname = current_database() and application_name = $1",
        )
        .bind(PHASE)
        .fetch_one(&mut *conn)
        .await?;
        if others == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sqlx::query("select pg_stat_force_next_flush(), pg_stat_clear_snapshot()")
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_scalar(
        "select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint
         from pg_stat_user_tables where relname = 'entries'",
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// The export, taken frame by frame and dropped (gzipped when `gzip`):
/// its size as sent, ETag and time.
async fn export(
    app: &Router,
    tag: Option<&str>,
    gzip: bool,
) -> anyhow::Result<(usize, String, Duration)> {
    let started = Instant::now();
    let mut request = Request::get("/api/v1/backstage/entities.yaml");
    if let Some(tag) = tag {
        request = request.header(header::IF_NONE_MATCH, tag);
    }
    if gzip {
        request = request.header(header::ACCEPT_ENCODING, "gzip");
    }
    let response = app.clone().oneshot(request.body(Body::empty())?).await?;
    ensure!(response.status() == StatusCode::OK, "{}", response.status());
    let etag = response
        .headers()
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let encoding = response.headers().get(header::CONTENT_ENCODING);
    ensure!(
        gzip == encoding.is_some_and(|e| e == "gzip"),
        "asked gzip: {gzip}, sent {encoding:?}"
    );
    let mut body = response.into_body();
    let mut bytes = 0;
    while let Some(frame) = body.frame().await {
        bytes += frame?.data_ref().map_or(0, |d| d.len());
    }
    Ok((bytes, etag, started.elapsed()))
}

async fn conditional(app: &Router, tag: &str) -> anyhow::Result<StatusCode> {
    let request = Request::get("/api/v1/backstage/entities.yaml")
        .header(header::IF_NONE_MATCH, tag)
        .body(Body::empty())?;
    Ok(app.clone().oneshot(request).await?.status())
}

/// Resets this process's peak resident size (`VmHWM`) to its current one.
fn reset_peak() -> anyhow::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5").context("resetting the peak RSS")
}

/// A size of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`).
fn rss_kib(field: &str) -> anyhow::Result<i64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{field} in /proc/self/status"))
}
