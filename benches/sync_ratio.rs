//! The full sync beside the listing it rests on, for the two triggers that
//! list a whole installation after start: the real `roster serve` (release
//! build under `cargo bench`), the fake GitHub with 50 ms added to every
//! request, an organisation of 10,000 repositories (30 % with a project
//! file, one pattern), a fresh PostgreSQL database.
//!
//! (1) The App installed through the `installation` `created` webhook:
//!     delivery until every repository has a final status.
//! (2) `POST /api/v1/resync` on the same organisation, unchanged: asked
//!     until the listing is done and the queue empty.
//!
//! For each, the listing's own time is taken from the fake GitHub's log
//! (the first listing page's arrival to the last one's, plus one answer's
//! latency), so it means the same whichever build runs; the figure is the
//! sync's time over it (target <= 1.3 x), with the requests by kind.
//!
//! `ROSTER_BENCH_REPOS` sets the size, `ROSTER_BENCH_BUDGET` the
//! installation's hourly budget; `ROSTER_BENCH_BINARY` runs another
//! build of `roster` (which migrates its own database), so
//! `scripts/bench-sync-ratio` can alternate two builds in one sitting.

use roster_testkit::bench_mode;
use roster_testkit::fake_github;
use roster_testkit::github_app;
use roster_testkit::github_counts;

use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, resync, server_env, Repo};
use github_counts::{check_requests, rest_reads, settle, verdict, wait_for_log};
use roster_testkit::server::Roster;
use sqlx::PgPool;

const LATENCY: Duration = Duration::from_millis(50);
const FILE: &str = "project.yaml";
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;
/// The sync's time over the listing's, at most.
const TARGET: f64 = 1.3;

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = bench_mode::full();
    let repos = match std::env::var("ROSTER_BENCH_REPOS") {
        Ok(n) => n.parse()?,
        Err(_) if full => 10_000,
        // `ROSTER_BENCH_SMOKE=1` (scripts/bench-smoke): the least that runs both.
        Err(_) if bench_mode::tiny() => 60,
        Err(_) => 300,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(repos, full))
}

fn yaml(name: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {name}, as listed\n")
}

async fn run(size: usize, full: bool) -> Result<(), Failed> {
    let fake = FakeGithub::start().await;
    let (pool, url) = github_counts::bench_database().await?;
    let dir = tempfile::tempdir()?;
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    // `ROSTER_BENCH_RUST_LOG=info,sqlx::query=debug` logs every statement.
    if let Ok(filter) = std::env::var("ROSTER_BENCH_RUST_LOG") {
        env.push(("RUST_LOG", filter));
    }
    println!(
        "sync_ratio{}: {size} repositories ({} with a project file), {} ms added to every GitHub request, build {}",
        if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
        size * 3 / 10,
        LATENCY.as_millis(),
        std::env::var("ROSTER_BENCH_BINARY").unwrap_or_else(|_| "this one".into()),
    );

    // The App is not installed yet: the start-up listing finds nothing.
    let roster = Roster::start(&env, dir.path()).await;
    wait_for_log(&roster, "listing done", Duration::from_secs(30)).await?;
    fake.add_installation(INSTALLATION, ORG);
    let mut repos = Vec::with_capacity(size);
    for n in 0..size {
        let name = format!("service-{n:06}");
        let id = if n % 10 < 3 {
            fake.add_repo_with_file(INSTALLATION, &name, FILE, &yaml(&name))
        } else {
            fake.add_repo(INSTALLATION, &name)
        };
        repos.push(Repo::new(id, INSTALLATION, ORG, &name));
    }
    // `ROSTER_BENCH_BUDGET`: the installation's hourly budget (GitHub's
    // smallest, 5,000, unless set; 12,500 for a large organisation).
    if let Some(budget) = std::env::var("ROSTER_BENCH_BUDGET")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        fake.set_budget_limit(INSTALLATION, budget);
    }
    fake.set_latency(LATENCY);
    let limit = Duration::from_secs(120).max(Duration::from_millis(size as u64 * 3));

    // (1) The installation webhook.
    fake.reset_counts();
    let started = Instant::now();
    let answer = deliver(
        &roster.base,
        "installation",
        installation_created(INSTALLATION, ORG, &repos),
    )
    .await;
    if answer.status != 202 {
        return Err(format!("the installation webhook was answered {}", answer.status).into());
    }
    let passes = listings_done(&roster);
    settle(&pool, size, limit).await?;
    let sync = started.elapsed();
    // The pass is logged once it ends; the sync may end before the log line.
    wait_for_passes(&roster, passes + 1, started + limit).await?;
    report(
        "(1) installed through the `installation` webhook",
        &fake,
        sync,
    );

    // (2) A resync of the same organisation, nothing changed.
    fake.reset_counts();
    let passes = listings_done(&roster);
    let started = Instant::now();
    let answer = resync(&roster.base).await;
    if answer.status != 202 {
        return Err(format!("the resync was answered {}", answer.status).into());
    }
    let sync = loop {
        if listings_done(&roster) > passes && queue_empty(&pool).await? {
            break started.elapsed();
        }
        if Instant::now() > started + limit {
            return Err(format!("the resync did not end within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    report("(2) `POST /api/v1/resync`, nothing changed", &fake, sync);
    println!(
        "  peak memory of the server (VmHWM): {:.1} MiB",
        peak_memory_mib(roster.child.id())
    );
    // `ROSTER_BENCH_LOG=path` keeps the server's log, to see where the time went.
    if let Some(path) = std::env::var_os("ROSTER_BENCH_LOG") {
        std::fs::copy(&roster.log, path)?;
    }
    drop(roster);
    Ok(())
}

/// Prints the sync's time beside the listing's, and the requests by kind.
fn report(what: &str, fake: &FakeGithub, sync: Duration) {
    let pages: Vec<Instant> = fake
        .log()
        .iter()
        .filter(|l| l.route == routes::GRAPHQL)
        .map(|l| l.at)
        .collect();
    let listing = match (pages.iter().min(), pages.iter().max()) {
        (Some(first), Some(last)) => *last - *first + LATENCY,
        _ => Duration::ZERO,
    };
    let ratio = sync.as_secs_f64() / listing.as_secs_f64().max(0.001);
    println!("{what}");
    println!(
        "  sync {:.2} s, listing {:.2} s ({} pages): {ratio:.2} x{} {}",
        sync.as_secs_f64(),
        listing.as_secs_f64(),
        pages.len(),
        bench_mode::target(&format!("<= {TARGET} x")),
        verdict(ratio <= TARGET)
    );
    println!(
        "  GitHub requests {}: listing pages {}, batch reads {}, REST reads {}, trees {}, check runs {}, directory {}, installation lists {}, tokens {}",
        fake.total(),
        fake.count(routes::GRAPHQL),
        fake.count(routes::GRAPHQL_READ),
        rest_reads(fake),
        fake.count(routes::GIT_TREE) + fake.count(routes::GRAPHQL_BLOBS),
        check_requests(fake),
        fake.count(routes::GRAPHQL_DIRECTORY),
        fake.count(routes::INSTALLATIONS),
        fake.token_creations(),
    );
}

/// Listing passes the server has logged as done.
fn listings_done(roster: &Roster) -> usize {
    roster.logs().matches("listing done").count()
}

async fn wait_for_passes(roster: &Roster, passes: usize, deadline: Instant) -> Result<(), Failed> {
    while listings_done(roster) < passes {
        if Instant::now() > deadline {
            return Err("the listing pass was not logged as done".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn queue_empty(pool: &PgPool) -> Result<bool, Failed> {
    let queued: bool = sqlx::query_scalar("select exists (select 1 from queue)")
        .fetch_one(pool)
        .await?;
    Ok(!queued)
}

fn peak_memory_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}
