//! Several project files per repository on GitHub, against the real
//! `roster serve` (release build under `cargo bench`) and the fake GitHub
//! with 50 ms added to every request, on a fresh PostgreSQL database per
//! round. Each round installs the App on an organisation of 10,000
//! repositories (3,000 with project files) through the `installation`
//! `created` webhook naming all of them, and waits until every repository
//! has a final status; then 20 pushes, one at a time, each changing one
//! project file of a different repository.
//!
//! - one file: `project.yaml` (the figures to compare with);
//! - `services/*/project.yaml`, 1 to 5 service files per repository.
//!   Targets: <= 210 GitHub requests (twice the one-file figure), <= 20 s;
//! - `**/project.yaml`, the same files: requests per 100 repositories and
//!   per push, and whether the first sync fits one hour of the budget
//!   GitHub gives this installation (5,000 requests an hour, 50 more per
//!   repository over 20, at most 12,500), and of its smallest (5,000). The
//!   fake's budget is raised for this round so that the walk is timed, not
//!   the wait for a reset.
//!
//! `cargo bench --bench github_patterns` runs the full size; without
//! `--bench` (as `scripts/bench-smoke` runs it) a small smoke run keeps
//! the suite fast: the three layouts side by side, each on its own server
//! and database, and 3 pushes each with `ROSTER_BENCH_SMOKE=1`.

use github_counts::{check_requests, github_requests, rest_reads, settle, verdict, wait_for_log};
use roster_testkit::fake_github;
use roster_testkit::github_app;
use roster_testkit::github_counts;

use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, push, resync, server_env, Repo};
use roster_testkit::server::Roster;
use roster_testkit::side_by_side::Lines;
use sqlx::PgPool;

const LATENCY: Duration = Duration::from_millis(50);
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;
/// GitHub's smallest hourly budget of an installation.
const HOURLY_BUDGET: u64 = 5_000;
/// What GitHub adds to it per repository over 20, and its ceiling.
const PER_REPOSITORY: u64 = 50;
const MOST_BUDGET: u64 = 12_500;

/// The hourly budget GitHub gives an installation on `repos` repositories
/// (counting no members, which add the same 50 each over 20).
fn installation_budget(repos: usize) -> u64 {
    let over = u64::try_from(repos.saturating_sub(20)).unwrap_or(u64::MAX);
    HOURLY_BUDGET
        .saturating_add(PER_REPOSITORY.saturating_mul(over))
        .min(MOST_BUDGET)
}
struct Size {
    repos: usize,
    with_files: usize,
    /// Pushes measured one at a time after each install.
    pushes: usize,
}

const FULL: Size = Size {
    repos: 10_000,
    with_files: 3_000,
    pushes: 20,
};

const SMOKE: Size = Size {
    repos: 300,
    with_files: 90,
    pushes: 20,
};

/// `ROSTER_BENCH_SMOKE=1`: the least that still runs every layout.
const TINY: Size = Size {
    repos: 60,
    with_files: 20,
    pushes: 3,
};

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// `project.yaml` at the root.
    One,
    /// `services/*/project.yaml`.
    Services,
    /// `**/project.yaml`, the same files as `Services`.
    AnyDepth,
}

impl Layout {
    fn patterns(self) -> Option<&'static str> {
        match self {
            Layout::One => None,
            Layout::Services => Some("services/*/project.yaml"),
            Layout::AnyDepth => Some("**/project.yaml"),
        }
    }

    fn label(self) -> &'static str {
        self.patterns().unwrap_or("project.yaml (one file)")
    }
}

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let size = if full {
        &FULL
    } else if roster_testkit::bench_mode::tiny() {
        &TINY
    } else {
        &SMOKE
    };
    println!(
        "github_patterns{}: {} repositories ({} with project files), {} ms added to every GitHub request",
        if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
        size.repos,
        size.with_files,
        LATENCY.as_millis()
    );
    runtime.block_on(async {
        if full {
            let mut lines = Lines::printed();
            let one = round(size, Layout::One, None, &mut lines).await?;
            round(size, Layout::Services, Some(one), &mut lines).await?;
            round(size, Layout::AnyDepth, Some(one), &mut lines).await?;
        } else {
            // Side by side, each on its own server and database: the
            // one-file round's requests only set a full run's target.
            let mut lines = [Lines::kept(), Lines::kept(), Lines::kept()];
            let [one, services, any_depth] = &mut lines;
            tokio::try_join!(
                round(size, Layout::One, None, one),
                round(size, Layout::Services, None, services),
                round(size, Layout::AnyDepth, None, any_depth),
            )?;
            lines.into_iter().for_each(Lines::print);
        }
        Ok(())
    })
}

fn yaml(name: &str, version: &str) -> Vec<u8> {
    format!("name: {name}\nowner: team-{name}\ndescription: {version}\n").into_bytes()
}

/// One install and its pushes under `layout`; the install's GitHub
/// requests.
async fn round(
    size: &Size,
    layout: Layout,
    one: Option<u64>,
    lines: &mut Lines,
) -> Result<u64, Failed> {
    let fake = FakeGithub::start().await;
    let (pool, url) = roster::db::testing::fresh_database().await?;
    let dir = tempfile::tempdir()?;
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    if let Some(patterns) = layout.patterns() {
        env.push(("ROSTER_PROJECT_FILES", patterns.to_owned()));
    }
    let roster = Roster::start(&env, dir.path()).await;
    wait_for_log(&roster, "listing done", Duration::from_secs(30)).await?;

    fake.add_installation(INSTALLATION, ORG);
    if layout == Layout::AnyDepth {
        fake.set_budget_limit(INSTALLATION, 1_000_000);
    }
    let step = size.repos / size.with_files;
    let mut repos = Vec::with_capacity(size.repos);
    let mut with_files = Vec::new();
    let mut files_total = 0;
    for n in 0..size.repos {
        let name = format!("service-{n:05}");
        let id = fake.add_repo(INSTALLATION, &name);
        let has_files = n % step == 0 && with_files.len() < size.with_files;
        let services = 1 + n % 5;
        fake.change_files(id, |files| {
            files.insert("README.md".into(), b"# a service".to_vec());
            files.insert("src/main.rs".into(), b"fn main() {}".to_vec());
            if !has_files {
                return;
            }
            match layout {
                Layout::One => {
                    files.insert("project.yaml".into(), yaml(&name, "v0"));
                }
                Layout::Services | Layout::AnyDepth => {
                    for k in 0..services {
                        let path = format!("services/s{k}/project.yaml");
                        files.insert(path, yaml(&format!("{name}-s{k}"), "v0"));
                        files.insert(format!("services/s{k}/main.go"), b"package s".to_vec());
                    }
                }
            }
        });
        if has_files {
            files_total += if layout == Layout::One { 1 } else { services };
            with_files.push((id, name.clone()));
        }
        repos.push(Repo::new(id, INSTALLATION, ORG, &name));
    }
    fake.set_latency(LATENCY);
    fake.reset_counts();

    let body = installation_created(INSTALLATION, ORG, &repos);
    let started = Instant::now();
    let answer = deliver(&roster.base, "installation", body).await;
    if answer.status != 202 {
        return Err(format!("the installation webhook was answered {}", answer.status).into());
    }
    settle(&pool, size.repos, Duration::from_secs(1_800)).await?;
    let took = started.elapsed();
    let used = github_requests(&fake);
    let entries: i64 = sqlx::query_scalar("select count(*) from entries")
        .fetch_one(&pool)
        .await?;
    lines.line(layout.label());
    lines.line(format!(
        "  install: {:.2} s, {used} GitHub requests, {:.2} per 100 repositories; {entries} entries of {files_total} files",
        took.as_secs_f64(),
        used as f64 * 100.0 / size.repos as f64
    ));
    lines.line(format!(
        "    listing pages {}, batch reads {}, trees {}, blob queries {}, files at a commit {}, REST reads {}, installation lists {}, tokens {}",
        fake.count(routes::GRAPHQL),
        fake.count(routes::GRAPHQL_READ),
        fake.count(routes::GIT_TREE),
        fake.count(routes::GRAPHQL_BLOBS),
        fake.count(routes::GRAPHQL_FILE),
        rest_reads(&fake),
        fake.count(routes::INSTALLATIONS),
        fake.token_creations()
    ));
    match (layout, one) {
        (Layout::Services, Some(one)) if roster_testkit::bench_mode::full() => lines.line(format!(
            "    targets: <= {} requests (2 x one file) {}, <= 210 {}, <= 20 s {}",
            2 * one,
            verdict(used <= 2 * one),
            verdict(used <= 210),
            verdict(took <= Duration::from_secs(20))
        )),
        (Layout::AnyDepth, _) => {
            let budget = installation_budget(size.repos);
            lines.line(format!(
                "    first sync: {:.2} hours of this installation's {budget}-request budget {} \
                 ({:.2} hours of the smallest, {HOURLY_BUDGET})",
                used as f64 / budget as f64,
                verdict(used <= budget),
                used as f64 / HOURLY_BUDGET as f64,
            ))
        }
        _ => {}
    }

    // A listing of the whole organisation, nothing changed since.
    fake.reset_counts();
    let done_before = roster.logs().matches("listing done").count();
    let started = Instant::now();
    let answer = resync(&roster.base).await;
    if !answer.status.is_success() {
        return Err(format!("the resync was answered {}", answer.status).into());
    }
    listed(&roster, done_before + 1, Duration::from_secs(1_800)).await?;
    settle(&pool, size.repos, Duration::from_secs(600)).await?;
    let relisted = github_requests(&fake);
    lines.line(format!(
        "  listing again, nothing changed: {:.2} s, {relisted} GitHub requests, {:.2} per 100 repositories (trees {}, blob queries {})",
        started.elapsed().as_secs_f64(),
        relisted as f64 * 100.0 / size.repos as f64,
        fake.count(routes::GIT_TREE),
        fake.count(routes::GRAPHQL_BLOBS)
    ));

    // Pushes, one at a time, each changing one project file.
    let mut requests = 0;
    let mut times = Vec::new();
    for (id, name) in with_files.iter().take(size.pushes) {
        let before = fake.head(*id).unwrap_or_default();
        let (path, entry) = match layout {
            Layout::One => ("project.yaml".to_owned(), name.clone()),
            _ => ("services/s0/project.yaml".to_owned(), format!("{name}-s0")),
        };
        let after = fake.push_file(*id, &path, &yaml(&entry, "v1"));
        let repo = Repo::new(*id, INSTALLATION, ORG, name);
        fake.reset_counts();
        let sent = Instant::now();
        let answer = deliver(&roster.base, "push", push(&repo, &before, &after)).await;
        if !answer.status.is_success() {
            return Err(format!("a push was answered {}", answer.status).into());
        }
        applied(&pool, &after, Duration::from_secs(60)).await?;
        times.push(sent.elapsed());
        requests += github_requests(&fake) - check_requests(&fake);
    }
    times.sort();
    let pushes = times.len().max(1);
    lines.line(format!(
        "  {} pushes changing one file: {:.2} GitHub reads per push (check runs aside), p50 {} ms",
        times.len(),
        requests as f64 / pushes as f64,
        times.get(times.len() / 2).map_or(0, Duration::as_millis)
    ));
    drop(roster);
    drop(pool);
    Ok(used)
}

/// Waits until the log says `listing done` `count` times.
async fn listed(roster: &Roster, count: usize, limit: Duration) -> Result<(), Failed> {
    let deadline = Instant::now() + limit;
    while roster.logs().matches("listing done").count() < count {
        if Instant::now() > deadline {
            return Err(format!("fewer than {count} listings done after {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Waits until some repository's synced commit is `head`.
async fn applied(pool: &PgPool, head: &str, limit: Duration) -> Result<(), Failed> {
    let deadline = Instant::now() + limit;
    loop {
        let done: bool =
            sqlx::query_scalar("select exists (select 1 from repositories where synced_sha = $1)")
                .bind(head)
                .fetch_one(pool)
                .await?;
        if done {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("the push of {head} not applied after {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
