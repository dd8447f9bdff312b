//! Relations on a large registry, through the real router (no network):
//! - 10,000 projects (100 repositories of 100), each depending on 3 others
//!   and in one of 20 systems: `GET /api/v1/graph` of the whole registry
//!   (at most 1 MiB, then `truncated`), a neighbourhood of depth 3, and the
//!   project page with its picture (target: under 50 ms);
//! - a hub registry, 10,000 projects each depending on `svc-00000` (the
//!   hub) and 2 others: who depends on the hub's 9,999 dependents, asked
//!   as before (`depends_on && $1`) and through the index name by name
//!   (`DEPENDENTS_SQL`), one graph of depth 3 around the hub, and 48 of
//!   them at once beside a plain project read (4 are read at once, the
//!   rest answered 503 at once);
//! - a dense registry, 1,000 projects each depending on 50 others (the
//!   most a project may): everything is within three steps of everything,
//!   and the graph of depth 3 and the page must stay bounded all the same.
//!
//! Run with `cargo bench --profile dev --bench relations_graph`; needs the
//! server of `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! Without `--bench`, a smoke run seeds a tenth of each; with
//! `ROSTER_BENCH_SMOKE=1` (`scripts/bench-smoke`), 200 projects and the
//! same dense 200, and reads 10 pages of each.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use futures_util::{stream, StreamExt};
use http_body_util::BodyExt;
use roster::db::testing::fresh_database;
use roster::registry::read_models::relations::{neighbourhood, DEPENDENTS_SQL};
use roster_testkit::bench_mode;
use roster_testkit::registry::{github_repo, queue};
use roster_testkit::router::{app_on, Options};
use roster_testkit::seed::Seed;
use sqlx::PgPool;
use tower::ServiceExt;

/// Projects per repository: the most one file may declare.
const PER_REPO: usize = 100;
/// Project pages read for the figures (a fifth in a `ROSTER_BENCH_SMOKE=1`
/// run).
const PAGES: usize = 50;
const MIB: usize = 1 << 20;
/// What the project page reads for its picture (`src/web/dashboard/project.rs`).
const PICTURE_DEPTH: u8 = 2;
const PICTURE_READ: usize = 300;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bench_mode::announce("relations_graph");
    let scale = if bench_mode::full() { 1 } else { 10 };
    // `ROSTER_BENCH_SMOKE=1`: fewer projects and pages still show each
    // figure.
    let tiny = bench_mode::tiny();
    let read = if tiny { PAGES / 5 } else { PAGES };

    let repos = if tiny { 2 } else { 100 / scale };
    let (app, pool) = registry(repos, 3).await?;
    let projects = repos * PER_REPO;
    println!("relations: {projects} projects, 3 dependencies each");
    let (bytes, took, body) = get(&app, "/api/v1/graph").await?;
    println!(
        "  whole registry: {} nodes, {} edges, truncated {}, {bytes} bytes in {:.0} ms{} {}",
        count(&body, "nodes"),
        count(&body, "edges"),
        body["truncated"],
        ms(took),
        bench_mode::target("at most 1 MiB"),
        bench_mode::verdict(bytes <= MIB),
    );
    let root = name(projects / 2);
    let (bytes, took, body) = get(&app, &format!("/api/v1/graph?root={root}&depth=3")).await?;
    println!(
        "  depth 3 around {root}: {} nodes, {} edges, {bytes} bytes in {:.1} ms",
        count(&body, "nodes"),
        count(&body, "edges"),
        ms(took),
    );
    pages((&app, &pool), projects, read, "under 50 ms", 50.0).await?;

    hub(repos).await?;

    let dense_repos = 10 / scale.min(5);
    let (app, pool) = registry(dense_repos, 50).await?;
    let projects = dense_repos * PER_REPO;
    println!("dense: {projects} projects, 50 dependencies each");
    let root = name(projects / 2);
    let (bytes, took, body) = get(&app, &format!("/api/v1/graph?root={root}&depth=3")).await?;
    println!(
        "  depth 3 around {root}: {} nodes, {} edges, truncated {}, {bytes} bytes in {:.0} ms{} {}",
        count(&body, "nodes"),
        count(&body, "edges"),
        body["truncated"],
        ms(took),
        bench_mode::target("at most 1 MiB"),
        bench_mode::verdict(bytes <= MIB),
    );
    let (bytes, took, body) = get(&app, "/api/v1/graph").await?;
    println!(
        "  whole registry: {} nodes, {} edges, truncated {}, {bytes} bytes in {:.0} ms{} {}",
        count(&body, "nodes"),
        count(&body, "edges"),
        body["truncated"],
        ms(took),
        bench_mode::target("at most 1 MiB"),
        bench_mode::verdict(bytes <= MIB),
    );
    // Each page draws 100 of its neighbourhood's 500 nodes and 120 of
    // their edges (some 400 among the 100, 5,000 in all).
    pages(
        (&app, &pool),
        projects,
        read,
        "under 50 ms, 100 nodes drawn",
        50.0,
    )
    .await?;
    let (_, took) = get_text(&app, "/").await?;
    println!(
        "  the dashboard's / (its warnings counted): {:.0} ms",
        ms(took)
    );
    Ok(())
}

/// Graph reads around a hub every project depends on.
async fn hub(repos: usize) -> anyhow::Result<()> {
    let (app, pool) = registry_of(repos, 3, true).await?;
    let projects = repos * PER_REPO;
    let hub = name(0);
    println!("hub: {projects} projects, each depending on {hub} and 2 others");
    let dependents: Vec<String> = (1..projects).map(name).collect();
    let cap = 20_001_i64;
    let before = "select e.name from entries e join repositories r on r.id = e.repo_id
         where e.depends_on && $1::text[] order by e.name limit $2";
    for (how, sql) in [
        ("depends_on && $1 (before)", before),
        ("the index, name by name", DEPENDENTS_SQL),
    ] {
        let started = Instant::now();
        let rows = sqlx::query(sql)
            .bind(&dependents)
            .bind(cap)
            .fetch_all(&pool)
            .await?;
        println!(
            "  who depends on {} names, {how}: {} rows in {:.0} ms",
            dependents.len(),
            rows.len(),
            ms(started.elapsed())
        );
    }
    let (bytes, took, body) = get(&app, &format!("/api/v1/graph?root={hub}&depth=3")).await?;
    println!(
        "  depth 3 around {hub}: {} nodes, {} edges, truncated {}, {bytes} bytes in {:.0} ms",
        count(&body, "nodes"),
        count(&body, "edges"),
        body["truncated"],
        ms(took),
    );
    let started = Instant::now();
    let graphs = futures_util::future::join_all((0..48).map(|_| {
        let app = app.clone();
        let uri = format!("/api/v1/graph?root={hub}&depth=3");
        async move {
            let asked = Instant::now();
            let answer = app.oneshot(Request::get(&uri).body(Body::empty())?).await?;
            let status = answer.status();
            answer.into_body().collect().await?;
            anyhow::Ok((status, asked.elapsed()))
        }
    }));
    let plain = async {
        // Once the graph reads are under way.
        tokio::task::yield_now().await;
        get_text(&app, &format!("/api/v1/projects/{}", name(projects / 2))).await
    };
    let (graphs, plain) = tokio::join!(graphs, plain);
    let all = started.elapsed();
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for answer in graphs {
        let (status, took) = answer?;
        match status {
            StatusCode::OK => ok.push(took),
            _ => refused.push(took),
        }
    }
    let slowest = |times: &[Duration]| times.iter().max().map_or(0.0, |d| ms(*d));
    println!(
        "  48 at once: {} answered in at most {:.0} ms, {} refused 503 in at most {:.1} ms, all in {:.0} ms; \
         a project read beside them {:.1} ms",
        ok.len(),
        slowest(&ok),
        refused.len(),
        slowest(&refused),
        ms(all),
        ms(plain?.1),
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn name(i: usize) -> String {
    format!("svc-{:05}", i)
}

fn count(body: &serde_json::Value, key: &str) -> usize {
    body[key].as_array().map_or(0, Vec::len)
}

/// `read` project pages, spread over the registry: median and p99, and
/// beside them what the page's read of the neighbourhood takes alone (the
/// picture's depth and bound), so that the rest is the picture's layout,
/// the page's other reads and its rendering.
async fn pages(
    (app, pool): (&Router, &PgPool),
    projects: usize,
    read: usize,
    target: &str,
    limit: f64,
) -> anyhow::Result<()> {
    let mut times = Vec::with_capacity(read);
    let mut reads = Vec::with_capacity(read);
    let mut drawn = 0;
    // Pages that say how many dependencies the picture left out.
    let mut noted = 0;
    for i in 0..read {
        let root = name(i * projects / read);
        let started = Instant::now();
        neighbourhood(pool, &root, PICTURE_DEPTH, PICTURE_READ).await?;
        reads.push(started.elapsed());
        let uri = format!("/projects/{root}");
        let started = Instant::now();
        let answer = app
            .clone()
            .oneshot(Request::get(&uri).body(Body::empty())?)
            .await?;
        ensure!(
            answer.status() == StatusCode::OK,
            "{uri}: {}",
            answer.status()
        );
        let body = answer.into_body().collect().await?.to_bytes();
        times.push(started.elapsed());
        let page = String::from_utf8_lossy(&body);
        drawn = drawn.max(page.matches("data-node=").count());
        noted += usize::from(page.contains("more not drawn"));
    }
    times.sort();
    reads.sort();
    let median = ms(times[read / 2]);
    let p99 = ms(times[read * 99 / 100]);
    println!(
        "  {read} project pages: median {median:.1} ms, p99 {p99:.1} ms, at most {drawn} nodes drawn, {noted} saying how many dependencies were left out{} {}",
        bench_mode::target(target),
        bench_mode::verdict(p99 < limit && drawn <= 100),
    );
    println!(
        "    their neighbourhoods read alone (depth {PICTURE_DEPTH}, at most {PICTURE_READ} nodes): median {:.1} ms, p99 {:.1} ms",
        ms(reads[read / 2]),
        ms(reads[read * 99 / 100]),
    );
    Ok(())
}

/// A fresh registry of `repos` repositories of [`PER_REPO`] projects, each
/// depending on `deps` others spread over the registry, behind a router.
async fn registry(repos: usize, deps: usize) -> anyhow::Result<(Router, PgPool)> {
    registry_of(repos, deps, false).await
}

/// [`registry`], every project also depending on the first (`hub`).
async fn registry_of(repos: usize, deps: usize, hub: bool) -> anyhow::Result<(Router, PgPool)> {
    let (pool, _url) = fresh_database()
        .await
        .context("creating a fresh database")?;
    let started = Instant::now();
    seed(&pool, repos, deps, hub).await?;
    println!(
        "(seeded {} projects in {:.1} s)",
        repos * PER_REPO,
        started.elapsed().as_secs_f64()
    );
    let app = app_on(
        &pool,
        &queue(&pool),
        Options {
            api_token: None,
            github_web_url: Some("https://github.com"),
        },
        |_, _| {},
        |_| {},
    );
    Ok((app, pool))
}

async fn seed(pool: &PgPool, repos: usize, deps: usize, hub: bool) -> anyhow::Result<()> {
    let total = repos * PER_REPO;
    let lifecycles = ["production", "experimental", "deprecated"];
    let seed = Seed::new(pool);
    stream::iter(0..repos)
        .for_each_concurrent(4, |r| {
            let seed = &seed;
            async move {
                let mut file = String::from("projects:\n");
                for p in 0..PER_REPO {
                    let i = r * PER_REPO + p;
                    // Spread over the registry, never the project itself.
                    let depends: Vec<String> = (1..=deps)
                        .map(|k| name((i + k * k * 37 + k) % total))
                        .chain(hub.then(|| name(0)))
                        .filter(|d| *d != name(i))
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    file.push_str(&format!(
                        "  - name: {}
    owner: team-{}
    lifecycle: {}
    system: system-{}
    depends_on: [{}]
",
                        name(i),
                        i % 40,
                        lifecycles[i % 3],
                        i % 20,
                        depends.join(", "),
                    ));
                }
                seed.repo_as(r as i64 + 1, github_repo("acme", format!("repo-{r:03}"), 1))
                    .await
                    .synced(&format!("{:040x}", r + 1), &file)
                    .await;
            }
        })
        .await;
    sqlx::query("analyze").execute(pool).await?;
    Ok(())
}

/// One answer of the router: its size, time and JSON.
async fn get(app: &Router, uri: &str) -> anyhow::Result<(usize, Duration, serde_json::Value)> {
    let started = Instant::now();
    let answer = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty())?)
        .await?;
    ensure!(
        answer.status() == StatusCode::OK,
        "{uri}: {}",
        answer.status()
    );
    let body = answer.into_body().collect().await?.to_bytes();
    let took = started.elapsed();
    Ok((body.len(), took, serde_json::from_slice(&body)?))
}

/// One answer of the router that need not be JSON: its status and time.
async fn get_text(app: &Router, uri: &str) -> anyhow::Result<(StatusCode, Duration)> {
    let started = Instant::now();
    let answer = app
        .clone()
        .oneshot(Request::get(uri).body(Body::empty())?)
        .await?;
    let status = answer.status();
    ensure!(status == StatusCode::OK, "{uri}: {status}");
    answer.into_body().collect().await?;
    Ok((status, started.elapsed()))
}
