//! End-to-end benchmark of the GitHub source: the real `roster serve`
//! (release build under `cargo bench`) against the fake GitHub with 50 ms
//! added to every request, on a fresh PostgreSQL database.
//!
//! (a) Full sync of an organisation of 10,000 repositories, 3,000 with a
//!     project file: wall time from start until no repository is `pending`,
//!     and the GitHub requests it used. Targets: <= 15 s, <= 104 requests
//!     besides the directory's pages (what the listing cost before batched
//!     reads: no regression; the directory, read with the listing since,
//!     costs a page of teams and one of members here, and is counted apart).
//! (b) Webhook-to-synced latency of 60 push webhooks sent at one per
//!     second (each after a commit in the fake; a busy organisation's
//!     default branches, within the read pace so no push shares a read):
//!     from sending the webhook until the repository's `synced_sha` is the
//!     new commit. Targets: p50 <= 80 ms, p99 < 400 ms. Faster trickles
//!     share reads and wait up to about a second: `github_batches` (e).
//!
//! `benches/github_batches.rs` measures the triggers that name many
//! repositories at once (the installation webhook, a burst of pushes).
//!
//! `cargo bench --bench github_e2e` runs the full size; without `--bench`
//! (as `scripts/bench-smoke` runs it) a small smoke run keeps the suite fast.

use roster_testkit::bench_mode;
use roster_testkit::fake_github;
use roster_testkit::github_app;
use roster_testkit::github_counts::{bench_database, check_requests, settle, verdict};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, push, server_env, Repo};
use roster_testkit::server::Roster;
use sqlx::PgPool;

const LATENCY: Duration = Duration::from_millis(50);
const FILE: &str = "project.yaml";
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;

/// The size of one run.
struct Size {
    repos: usize,
    with_file: usize,
    webhooks: usize,
    per_second: u32,
}

const FULL: Size = Size {
    repos: 10_000,
    with_file: 3_000,
    webhooks: 60,
    per_second: 1,
};

const SMOKE: Size = Size {
    repos: 200,
    with_file: 60,
    webhooks: 10,
    per_second: 20,
};

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // A larger organisation, e.g. `ROSTER_BENCH_REPOS=100000`: 30 % of the
    // repositories with a project file, as in the full size.
    let size = match std::env::var("ROSTER_BENCH_REPOS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        Some(repos) if full => Size {
            repos,
            with_file: repos * 3 / 10,
            ..FULL
        },
        _ if full => FULL,
        _ => SMOKE,
    };
    runtime.block_on(run(&size, full))
}

/// The installation's hourly budget: `ROSTER_BENCH_BUDGET`, else GitHub's
/// smallest (5,000).
fn budget() -> Option<u64> {
    std::env::var("ROSTER_BENCH_BUDGET").ok()?.parse().ok()
}

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

async fn run(size: &Size, full: bool) -> Result<(), Failed> {
    let fake = FakeGithub::start().await;
    fake.add_installation(INSTALLATION, ORG);
    let step = size.repos / size.with_file;
    let mut with_file = Vec::new();
    for n in 0..size.repos {
        let name = format!("service-{n:05}");
        if n % step == 0 && with_file.len() < size.with_file {
            let id = fake.add_repo_with_file(INSTALLATION, &name, FILE, &yaml(&name, "v0"));
            with_file.push(Repo::new(id, INSTALLATION, ORG, &name));
        } else {
            fake.add_repo(INSTALLATION, &name);
        }
    }
    let (pool, url) = bench_database().await?;
    let dir = tempfile::tempdir()?;
    if let Some(limit) = budget() {
        fake.set_budget_limit(INSTALLATION, limit);
    }
    fake.set_latency(LATENCY);
    fake.reset_counts();

    println!(
        "github_e2e{}: {} repositories ({} with a project file), {} ms added to every GitHub request, budget {}/h",
        if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
        size.repos,
        size.with_file,
        LATENCY.as_millis(),
        budget().unwrap_or(5_000)
    );

    // (a) The full sync, from process start.
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    // A knob for comparing runs, e.g. `ROSTER_WORKERS=32 cargo bench ...`.
    if let Ok(workers) = std::env::var("ROSTER_WORKERS") {
        env.push(("ROSTER_WORKERS", workers));
    }
    let commits_before = commits(&pool).await?;
    let started = Instant::now();
    let roster = Roster::start(&env, dir.path()).await;
    let healthy = started.elapsed();
    let limit = Duration::from_secs(120).max(Duration::from_millis(size.repos as u64 * 3));
    settle(&pool, size.repos, limit).await?;
    let sync = started.elapsed();
    let server_cpu = cpu_seconds(roster.child.id());
    let peak_after_sync = peak_memory_mib(roster.child.id());
    let database_cpu = database_cpu_seconds(&pool).await?;
    let commits_during = commits(&pool).await?.saturating_sub(commits_before);
    let tables = table_activity(&pool).await?;
    let requests = fake.total();
    let per_repo = [
        routes::GRAPHQL_READ,
        routes::REPO_BY_ID,
        routes::REPO,
        routes::COMMIT,
        routes::CONTENTS,
    ]
    .iter()
    .map(|r| fake.count(r))
    .sum::<u64>();
    let statuses: Vec<(String, i64)> =
        sqlx::query_as("select status, count(*) from repositories group by status order by status")
            .fetch_all(&pool)
            .await?;
    // The listing's own time: its first page asked to its last answered.
    let listing_ms = logged_number(&roster.logs(), "installation listed", "duration_ms=");
    let pass_ms = logged_number(&roster.logs(), "listing done", "duration_ms=");

    println!("(a) full sync");
    println!(
        "  wall time, start to no repository pending: {:.2} s{} {}",
        sync.as_secs_f64(),
        bench_mode::target("<= 15 s"),
        verdict(sync <= Duration::from_secs(15))
    );
    let seconds = |ms: Option<u64>| {
        ms.map(|ms| format!("{:.2} s", ms as f64 / 1000.0))
            .unwrap_or_else(|| "not logged".into())
    };
    println!(
        "    of which: process start to /healthz {:.2} s; the listing's own time (first page asked to last page answered) {}; the listing pass with its sweep {}",
        healthy.as_secs_f64(),
        seconds(listing_ms),
        seconds(pass_ms)
    );
    if let Some(ms) = listing_ms {
        println!(
            "    full sync / listing: {:.2}x",
            sync.as_secs_f64() * 1000.0 / ms.max(1) as f64
        );
    }
    let directory = fake.count(routes::GRAPHQL_DIRECTORY);
    println!(
        "  GitHub requests: {requests}, {} besides the directory's {directory} pages{} {}",
        requests - directory,
        bench_mode::target("<= 104 besides the directory, no regression"),
        verdict(requests - directory <= 104)
    );
    println!(
        "    listing pages {}, repository reads {}, trees {}, check runs {}, installation lists {}, tokens {}, delivery log reads {}, directory pages {directory}",
        fake.count(routes::GRAPHQL),
        per_repo,
        fake.count(routes::GIT_TREE) + fake.count(routes::GRAPHQL_BLOBS),
        check_requests(&fake),
        fake.count(routes::INSTALLATIONS),
        fake.token_creations(),
        fake.count(routes::HOOK_DELIVERIES),
    );
    let shown: Vec<String> = statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    println!("  statuses: {}", shown.join(", "));
    println!(
        "  CPU used: server {:.1} s, its database connections {:.1} s; database commits ~{} ({:.1} per repository)",
        server_cpu,
        database_cpu,
        commits_during,
        commits_during as f64 / size.repos as f64
    );
    println!("  peak memory of the server (VmHWM): {peak_after_sync:.1} MiB");
    println!("  table activity (statistics lag up to a second):");
    for line in tables {
        println!("    {line}");
    }

    // (b) Push webhooks at a steady rate.
    let before = fake.total();
    let latencies = webhooks(&fake, &roster, &pool, &with_file, size).await?;
    let used = fake.total() - before;
    let round_trip = fake_round_trip(&api).await;
    let (p50, p99, max) = (
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 100.0),
    );
    println!(
        "(b) webhook to synced, {} push webhooks at {} per second",
        latencies.len(),
        size.per_second
    );
    println!(
        "  p50 {:.0} ms{} {}",
        ms(p50),
        bench_mode::target("<= 80 ms"),
        verdict(p50 <= Duration::from_millis(80))
    );
    println!(
        "  p99 {:.0} ms{} {}",
        ms(p99),
        bench_mode::target("< 400 ms"),
        verdict(p99 < Duration::from_millis(400))
    );
    println!("  max {:.0} ms", ms(max));
    println!(
        "  GitHub requests per webhook: {:.1}; one round trip to the fake GitHub: {:.0} ms",
        used as f64 / latencies.len().max(1) as f64,
        ms(round_trip)
    );
    println!(
        "  peak memory of the server over the whole run (VmHWM): {:.1} MiB",
        peak_memory_mib(roster.child.id())
    );
    drop(roster);
    Ok(())
}

/// The peak resident memory of process `pid` so far, in MiB (0 when unknown).
fn peak_memory_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Sends one push webhook per `1 / per_second` seconds, each after a new
/// commit in the fake, and returns each one's time until it was synced.
async fn webhooks(
    fake: &FakeGithub,
    roster: &Roster,
    pool: &PgPool,
    repos: &[Repo],
    size: &Size,
) -> Result<Vec<Duration>, Failed> {
    // Repository id → (the commit it must reach, when its webhook was sent).
    let waiting: Arc<Mutex<HashMap<i64, (String, Instant)>>> = Arc::default();
    let mut latencies = Vec::with_capacity(size.webhooks);
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / size.per_second);
    let mut senders = tokio::task::JoinSet::new();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while latencies.len() < size.webhooks {
        if Instant::now() > deadline {
            return Err(
                format!("{} webhooks never synced", size.webhooks - latencies.len()).into(),
            );
        }
        tokio::select! {
            _ = ticker.tick(), if sent < size.webhooks => {
                let repo = repos[sent % repos.len()].clone();
                let before = fake.head(repo.id).unwrap_or_default();
                let after = fake.push_file(repo.id, FILE, yaml(&repo.name, &format!("v{}", sent + 1)).as_bytes());
                let body = push(&repo, &before, &after);
                let base = roster.base.clone();
                let waiting = waiting.clone();
                senders.spawn(async move {
                    let at = Instant::now();
                    lock(&waiting).insert(repo.id, (after, at));
                    deliver(&base, "push", body).await.status.as_u16()
                });
                sent += 1;
            }
            _ = tokio::time::sleep(Duration::from_millis(5)) => {
                let ids: Vec<i64> = lock(&waiting).keys().copied().collect();
                if ids.is_empty() {
                    continue;
                }
                let rows: Vec<(i64, Option<String>)> =
                    sqlx::query_as("select id, synced_sha from repositories where id = any($1)")
                        .bind(&ids)
                        .fetch_all(pool)
                        .await?;
                let now = Instant::now();
                let mut waiting = lock(&waiting);
                for (id, sha) in rows {
                    let reached = matches!((waiting.get(&id), &sha), (Some((want, _)), Some(sha)) if want == sha);
                    if reached {
                        if let Some((_, at)) = waiting.remove(&id) {
                            latencies.push(now - at);
                        }
                    }
                }
            }
            Some(answer) = senders.join_next() => {
                let status = answer?;
                if status != 202 {
                    return Err(format!("a webhook was answered {status}").into());
                }
            }
        }
    }
    latencies.sort();
    Ok(latencies)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `p`-th percentile of sorted `values` (nearest rank).
fn percentile(values: &[Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// The median time of one request to the fake GitHub (its added latency
/// plus the local round trip): the floor under every GitHub call.
async fn fake_round_trip(api: &str) -> Duration {
    let url = format!("{}repositories/1", api);
    let mut times = Vec::new();
    for _ in 0..5 {
        let at = Instant::now();
        let _ = roster_testkit::http::get(&url).await;
        times.push(at.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

/// Transactions committed in this database so far (statistics lag by up
/// to a second).
async fn commits(pool: &PgPool) -> Result<i64, Failed> {
    Ok(sqlx::query_scalar(
        "select xact_commit from pg_stat_database where datname = current_database()",
    )
    .fetch_one(pool)
    .await?)
}

/// One table's activity, from `pg_stat_user_tables`.
struct TableActivity {
    relname: String,
    seq_scan: i64,
    seq_tup_read: i64,
    idx_scan: i64,
    idx_tup_fetch: i64,
    n_tup_ins: i64,
    n_tup_upd: i64,
    n_tup_del: i64,
    n_dead_tup: i64,
}

roster::from_row!(TableActivity {
    relname,
    seq_scan,
    seq_tup_read,
    idx_scan,
    idx_tup_fetch,
    n_tup_ins,
    n_tup_upd,
    n_tup_del,
    n_dead_tup
});

/// Per table: scans and rows read, written, deleted; dead rows left.
async fn table_activity(pool: &PgPool) -> Result<Vec<String>, Failed> {
    let rows: Vec<TableActivity> = sqlx::query_as(
        "select relname::text as relname, coalesce(seq_scan, 0) as seq_scan,
                coalesce(seq_tup_read, 0) as seq_tup_read, coalesce(idx_scan, 0) as idx_scan,
                coalesce(idx_tup_fetch, 0) as idx_tup_fetch,
                n_tup_ins, n_tup_upd, n_tup_del, n_dead_tup
         from pg_stat_user_tables
         where n_tup_ins + n_tup_upd + n_tup_del > 0 order by relname",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|t| {
            format!(
                "{}: seq scans {} ({} rows), index scans {} ({} rows), \
                 inserted {}, updated {}, deleted {}, dead {}",
                t.relname,
                t.seq_scan,
                t.seq_tup_read,
                t.idx_scan,
                t.idx_tup_fetch,
                t.n_tup_ins,
                t.n_tup_upd,
                t.n_tup_del,
                t.n_dead_tup
            )
        })
        .collect())
}

/// User and system CPU time of process `pid`, in seconds (0 when unknown).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 12th and 13th.
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    ticks / per_second.max(1) as f64
}

/// CPU time of the database backends serving this database now.
async fn database_cpu_seconds(pool: &PgPool) -> Result<f64, Failed> {
    let pids: Vec<i32> =
        sqlx::query_scalar("select pid from pg_stat_activity where datname = current_database()")
            .fetch_all(pool)
            .await?;
    Ok(pids
        .into_iter()
        .map(|pid| cpu_seconds(u32::try_from(pid).unwrap_or(0)))
        .sum())
}

/// The number after `field` on the last log line containing `marker`.
fn logged_number(logs: &str, marker: &str, field: &str) -> Option<u64> {
    let line = logs.lines().rev().find(|l| l.contains(marker))?;
    let rest = &line[line.find(field)? + field.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
