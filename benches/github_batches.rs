//! Triggers that name many repositories at once, against the real
//! `roster serve` (release build under `cargo bench`) and the fake GitHub
//! with 50 ms added to every request and GitHub's smallest budget (5,000
//! requests an hour per installation), on a fresh PostgreSQL database.
//!
//! (c) The App installed on an organisation of 10,000 repositories (3,000
//!     with a project file) through the `installation` `created` webhook
//!     naming all of them: time from the delivery until every repository
//!     has a final status, and the GitHub requests used. Targets: <= 15 s,
//!     <= 1.1 x ceil(N/100) + 10 requests.
//! (d) 2,000 pushes to different repositories, sent as fast as 16 senders
//!     can (a campaign pushing to every repository): every push applied,
//!     and the GitHub requests used. Target: <= 100 requests.
//! (e) The same pushes spread evenly over a minute (a steady trickle):
//!     every push applied, the GitHub requests used (target <= 100) and
//!     each push's time from sent to its change committed.
//! (f) 200 pushes at 20/s changing the project file, first on a settled
//!     server, then while two listings of every repository run back to
//!     back (as after the start-up listing the `installation` webhook's
//!     does): each push's time from sent to its change committed. Target:
//!     during the listings, p50 and p99 within 1.2 x the settled ones.
//! (g) 200 pushes at 20/s to different synced repositories changing only
//!     README.md: GitHub requests (target <= 3 in all, tokens aside) and
//!     webhook -> synced_sha recorded (target p50 <= 50 ms); (h) the same
//!     with payloads that list no paths, read as every push was before;
//!     (i) 100 pushes changing the project file: check runs posted.
//!
//! `cargo bench --bench github_batches` runs the full size; without
//! `--bench` (as `scripts/bench-smoke` runs it) a small smoke run keeps
//! the suite fast.

use roster_testkit::bench_mode;
use roster_testkit::fake_github;
use roster_testkit::free_pushes;
use roster_testkit::github_app;
use roster_testkit::github_counts;

use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, push, resync, server_env, Repo};
use github_counts::{check_requests, github_requests, rest_reads, settle, verdict, wait_for_log};
use roster_testkit::server::Roster;
use sqlx::PgPool;

const LATENCY: Duration = Duration::from_millis(50);
const FILE: &str = "project.yaml";
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;
/// Concurrent senders of the push burst.
const SENDERS: usize = 16;

struct Size {
    repos: usize,
    with_file: usize,
    pushes: usize,
    /// Pushes of round (f), sent at 20 a second.
    paced: usize,
    /// How long round (e) spreads its pushes over.
    spread: Duration,
    /// Pushes of rounds (g) and (h), and of round (i).
    free: usize,
    checked: usize,
    /// How long rounds (g) and (h) watch for requests once every push is
    /// recorded.
    quiet: Duration,
}

const FULL: Size = Size {
    repos: 10_000,
    with_file: 3_000,
    pushes: 2_000,
    paced: 200,
    spread: Duration::from_secs(60),
    free: 200,
    checked: 100,
    quiet: Duration::from_secs(2),
};

const SMOKE: Size = Size {
    repos: 300,
    with_file: 90,
    pushes: 60,
    paced: 20,
    spread: Duration::from_secs(2),
    free: 200,
    checked: 100,
    quiet: Duration::from_secs(2),
};

/// `ROSTER_BENCH_SMOKE=1`: the least that still runs every round. Each
/// push to the project file costs a check run, and check runs post one a
/// second: round (i) waits for as many as it pushes, behind those of the
/// rounds before it.
const TINY: Size = Size {
    repos: 60,
    with_file: 20,
    pushes: 4,
    paced: 2,
    spread: Duration::from_secs(1),
    free: 5,
    checked: 2,
    quiet: Duration::from_millis(500),
};

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(
        if full {
            &FULL
        } else if bench_mode::tiny() {
            &TINY
        } else {
            &SMOKE
        },
        full,
    ))
}

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

async fn run(size: &Size, full: bool) -> Result<(), Failed> {
    let fake = FakeGithub::start().await;
    let (pool, url) = github_counts::bench_database().await?;
    let dir = tempfile::tempdir()?;
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    if let Ok(workers) = std::env::var("ROSTER_WORKERS") {
        env.push(("ROSTER_WORKERS", workers));
    }
    println!(
        "github_batches{}: {} repositories ({} with a project file), {} ms added to every GitHub request",
        if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
        size.repos,
        size.with_file,
        LATENCY.as_millis()
    );

    // The App is not installed yet: the start-up listing finds nothing.
    let roster = Roster::start(&env, dir.path()).await;
    wait_for_log(&roster, "listing done", Duration::from_secs(30)).await?;

    fake.add_installation(INSTALLATION, ORG);
    let step = size.repos / size.with_file;
    let mut repos = Vec::with_capacity(size.repos);
    let mut with_file = Vec::with_capacity(size.with_file);
    for n in 0..size.repos {
        let name = format!("service-{n:05}");
        let id = if n % step == 0 && with_file.len() < size.with_file {
            let id = fake.add_repo_with_file(INSTALLATION, &name, FILE, &yaml(&name, "v0"));
            with_file.push(Repo::new(id, INSTALLATION, ORG, &name));
            id
        } else {
            fake.add_repo(INSTALLATION, &name)
        };
        repos.push(Repo::new(id, INSTALLATION, ORG, &name));
    }
    fake.set_latency(LATENCY);
    fake.reset_counts();

    // (c) The installation webhook.
    let body = installation_created(INSTALLATION, ORG, &repos);
    let started = Instant::now();
    let answer = deliver(&roster.base, "installation", body).await;
    if answer.status != 202 {
        return Err(format!("the installation webhook was answered {}", answer.status).into());
    }
    let answered = started.elapsed();
    settle(&pool, size.repos, Duration::from_secs(180)).await?;
    let install = started.elapsed();
    let used = github_requests(&fake);
    let limit = (size.repos.div_ceil(100) as f64 * 1.1).floor() as u64 + 10;
    let statuses: Vec<(String, i64)> =
        sqlx::query_as("select status, count(*) from repositories group by status order by status")
            .fetch_all(&pool)
            .await?;
    println!("(c) installed through the `installation` `created` webhook");
    println!(
        "  delivery to every repository final: {:.2} s{} {}; the 202 came after {} ms",
        install.as_secs_f64(),
        bench_mode::target("<= 15 s"),
        verdict(install <= Duration::from_secs(15)),
        answered.as_millis()
    );
    println!(
        "  GitHub requests: {used}{} {}",
        bench_mode::target(&format!("<= {limit}")),
        verdict(used <= limit)
    );
    println!(
        "    listing pages {}, batch reads {}, REST reads {}, installation lists {}, tokens {}",
        fake.count(routes::GRAPHQL),
        fake.count(routes::GRAPHQL_READ),
        rest_reads(&fake),
        fake.count(routes::INSTALLATIONS),
        fake.token_creations()
    );
    let shown: Vec<String> = statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    println!("  statuses: {}", shown.join(", "));

    // (d) A burst of pushes, each to a different repository.
    let targets = &with_file[..size.pushes.min(with_file.len())];
    let round = push_round(&fake, &roster, &pool, targets, "v1", None).await?;
    println!(
        "(d) {} pushes to different repositories, sent by {SENDERS} senders",
        targets.len()
    );
    round.print(targets.len(), 100);

    // (e) The same number of pushes spread evenly over a minute: past the
    // read pace's burst, the pushes that arrive within a second share a
    // read, each waiting at most about a second (the latency row shows it).
    let spread = size.spread;
    let spacing = spread / u32::try_from(targets.len().max(1)).unwrap_or(u32::MAX);
    let round = push_round(&fake, &roster, &pool, targets, "v2", Some(spacing)).await?;
    println!(
        "(e) {} pushes to different repositories, one every {} ms ({} s in all)",
        targets.len(),
        spacing.as_millis(),
        spread.as_secs()
    );
    round.print(targets.len(), 100);

    during_listings(
        &fake,
        &roster,
        &pool,
        &with_file[..size.paced.min(with_file.len())],
    )
    .await?;

    // (g), (h), (i): pushes that leave the file alone, and check runs.
    let readme_targets = &with_file[..size.free.min(with_file.len())];
    let rounds = [
        ("(g)", free_pushes::Change::Readme, readme_targets),
        ("(h)", free_pushes::Change::ReadmeUnlisted, readme_targets),
        (
            "(i)",
            free_pushes::Change::ProjectFile,
            &with_file[..size.checked.min(with_file.len())],
        ),
    ];
    for (label, change, targets) in rounds {
        let figures = free_pushes::round(
            &fake,
            &roster.base,
            &pool,
            targets,
            change,
            20,
            FILE,
            size.quiet,
        )
        .await?;
        let what = match change {
            free_pushes::Change::Readme => "changing only README.md",
            free_pushes::Change::ReadmeUnlisted => {
                "changing only README.md, payloads listing no paths (read, as before)"
            }
            free_pushes::Change::ProjectFile => "changing the project file",
        };
        figures.print(
            &format!(
                "{label} {} pushes at 20/s to different repositories {what}",
                targets.len()
            ),
            targets.len(),
        );
    }
    drop(roster);
    Ok(())
}

/// (f): the same pushes at 20/s, settled and then during two listings.
async fn during_listings(
    fake: &FakeGithub,
    roster: &Roster,
    pool: &PgPool,
    targets: &[Repo],
) -> Result<(), Failed> {
    let spacing = Some(Duration::from_millis(50));
    let settled = push_round(fake, roster, pool, targets, "v3", spacing).await?;
    println!(
        "(f) {} pushes at 20/s changing the project file",
        targets.len()
    );
    println!("  settled:");
    settled.print(targets.len(), 100);

    let done_before = roster.logs().matches("listing done").count();
    let started = Instant::now();
    fake.reset_counts();
    if resync(&roster.base).await.status != 202 {
        return Err("the first resync was refused".into());
    }
    // The second is asked for once the first runs, so it follows it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.count(routes::GRAPHQL) == 0 {
        if Instant::now() > deadline {
            return Err("the listing did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if resync(&roster.base).await.status != 202 {
        return Err("the second resync was refused".into());
    }
    let during = push_round(fake, roster, pool, targets, "v4", spacing).await?;
    let pushed = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(180);
    while roster.logs().matches("listing done").count() < done_before + 2 {
        if Instant::now() > deadline {
            return Err("the two listings did not finish".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "  during two listings back to back (all pushes applied {:.2} s after the first listing was asked for, both listings done after {:.2} s):",
        pushed.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    during.print(targets.len(), 100);
    let (p50, p99) = (during.at(0.5), during.at(0.99));
    let (s50, s99) = (settled.at(0.5), settled.at(0.99));
    println!(
        "  during / settled: p50 {:.2}x, p99 {:.2}x{} {}",
        p50 as f64 / s50.max(1) as f64,
        p99 as f64 / s99.max(1) as f64,
        bench_mode::target("<= 1.2x"),
        verdict(p50 * 5 <= s50 * 6 && p99 * 5 <= s99 * 6)
    );
    Ok(())
}

/// What one round of pushes cost.
struct Round {
    sent: Duration,
    applied: Duration,
    /// Requests that read repositories and files.
    used: u64,
    /// Requests that post the `Roster` check run on each new commit.
    checks: u64,
    batch_reads: u64,
    rest_reads: u64,
    /// Push sent → its change committed, sorted.
    latencies: Vec<Duration>,
}

impl Round {
    /// The `q` quantile of the latencies, in milliseconds.
    fn at(&self, q: f64) -> u128 {
        let n = self.latencies.len();
        let i = ((n as f64 * q).ceil() as usize).clamp(1, n.max(1)) - 1;
        self.latencies.get(i).map_or(0, Duration::as_millis)
    }

    fn print(&self, pushes: usize, target: u64) {
        println!(
            "  all sent after {:.2} s; all applied after {:.2} s",
            self.sent.as_secs_f64(),
            self.applied.as_secs_f64()
        );
        println!(
            "  GitHub reads: {}{} {}: batch reads {}, REST reads {}, {:.1} pushes per read",
            self.used,
            bench_mode::target(&format!("<= {target}")),
            verdict(self.used <= target),
            self.batch_reads,
            self.rest_reads,
            pushes as f64 / self.batch_reads.max(1) as f64
        );
        println!(
            "  push sent -> change committed: p50 {} ms, p99 {} ms, max {} ms",
            self.at(0.5),
            self.at(0.99),
            self.at(1.0)
        );
        println!(
            "  check runs on the new commits (ROSTER_CHECKS=all; none with pull_requests or off): {} requests",
            self.checks
        );
    }
}

/// Pushes a new version of every target's file and delivers the pushes, as
/// fast as [`SENDERS`] senders can or one every `spacing`; returns once
/// every push is applied.
async fn push_round(
    fake: &FakeGithub,
    roster: &Roster,
    pool: &PgPool,
    targets: &[Repo],
    version: &str,
    spacing: Option<Duration>,
) -> Result<Round, Failed> {
    fake.reset_counts();
    // A burst's commits are all made first; spaced pushes commit each just
    // before its delivery, so a listing running meanwhile cannot see a
    // commit before its push is sent.
    let commit = |repo: &Repo| {
        let before = fake.head(repo.id).unwrap_or_default();
        let after = fake.push_file(repo.id, FILE, yaml(&repo.name, version).as_bytes());
        (push(repo, &before, &after), after)
    };
    let mut heads = Vec::with_capacity(targets.len());
    let mut bodies = Vec::with_capacity(targets.len());
    if spacing.is_none() {
        for repo in targets {
            let (body, after) = commit(repo);
            bodies.push(body);
            heads.push(after);
        }
    }
    let started = Instant::now();
    let mut senders = tokio::task::JoinSet::new();
    let mut sent_at = std::collections::HashMap::new();
    for (n, repo) in targets.iter().enumerate() {
        let body = match spacing {
            Some(spacing) => {
                let at = started + spacing * u32::try_from(n).unwrap_or(u32::MAX);
                tokio::time::sleep_until(at.into()).await;
                let (body, after) = commit(repo);
                heads.push(after);
                body
            }
            None => std::mem::take(&mut bodies[n]),
        };
        if senders.len() >= SENDERS {
            check_sent(senders.join_next().await)?;
        }
        let base = roster.base.clone();
        sent_at.insert(heads[n].clone(), epoch_seconds());
        senders.spawn(async move { deliver(&base, "push", body).await.status.as_u16() });
    }
    while let Some(sent) = senders.join_next().await {
        check_sent(Some(sent))?;
    }
    let sent = started.elapsed();
    applied(pool, &heads, Duration::from_secs(180)).await?;
    let committed: Vec<(String, f64)> = sqlx::query_as(
        "select sha, extract(epoch from at)::float8 from changes where sha = any($1)",
    )
    .bind(&heads)
    .fetch_all(pool)
    .await?;
    let mut latencies: Vec<Duration> = committed
        .iter()
        .filter_map(|(sha, at)| Some(Duration::from_secs_f64((at - sent_at.get(sha)?).max(0.0))))
        .collect();
    latencies.sort();
    Ok(Round {
        latencies,
        sent,
        applied: started.elapsed(),
        used: github_requests(fake) - check_requests(fake),
        checks: check_requests(fake),
        batch_reads: fake.count(routes::GRAPHQL_READ),
        rest_reads: rest_reads(fake),
    })
}

fn check_sent(joined: Option<Result<u16, tokio::task::JoinError>>) -> Result<(), Failed> {
    match joined {
        Some(Ok(202)) | None => Ok(()),
        Some(Ok(status)) => Err(format!("a push was answered {status}").into()),
        Some(Err(e)) => Err(e.into()),
    }
}

/// Waits until every commit of `heads` is some repository's synced commit.
async fn applied(pool: &PgPool, heads: &[String], limit: Duration) -> Result<(), Failed> {
    let deadline = Instant::now() + limit;
    loop {
        let done: i64 =
            sqlx::query_scalar("select count(*) from repositories where synced_sha = any($1)")
                .bind(heads)
                .fetch_one(pool)
                .await?;
        if usize::try_from(done).unwrap_or(0) == heads.len() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(
                format!("{} of {} pushes applied after {limit:?}", done, heads.len()).into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Now, as seconds since the Unix epoch (what PostgreSQL's `at` compares to).
fn epoch_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
