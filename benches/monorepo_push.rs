//! A push touching one service file of a monorepo, next to a push of a
//! single-file repository, in the same run: the real `roster serve`
//! (release build under `cargo bench`) against the fake GitHub with 50 ms
//! added to every request, each round on a fresh PostgreSQL database.
//!
//! - single file: `ROSTER_PROJECT_FILES=project.yaml`, repositories with
//!   one `project.yaml`; each push changes it;
//! - several files: `ROSTER_PROJECT_FILES=services/*/project.yaml`,
//!   repositories with 5 service files; each push changes one of them;
//! - the same files found by `**/project.yaml` (the tree walked).
//!
//! Each round sends push webhooks at one per second (so no two share a
//! read) and measures from sending the webhook until the repository's
//! `synced_sha` is the new commit (its entry changed in the same
//! transaction), p50 and p99, and the GitHub requests per push. Target:
//! the several-file p50 within 1.2 × the single-file p50.
//!
//! The several-file layouts run twice: with pushes whose payload lists
//! the paths each commit touched (the run reads only the touched file at
//! the push's commit), and with the same pushes without those lists (the
//! repository is read whole, as before pushes were read in part): the
//! requests per push of both are printed.
//!
//! `cargo bench --bench monorepo_push`; without `--bench` (as
//! `cargo test --benches` runs it) a small smoke run keeps the suite fast.

use roster_testkit::bench_mode;
use roster_testkit::fake_github;
use roster_testkit::github_app;

use std::time::{Duration, Instant};

use fake_github::{FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, push_of_commits, server_env, Repo};
use roster_testkit::server::Roster;
use sqlx::PgPool;

const LATENCY: Duration = Duration::from_millis(50);
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;
const SERVICES: usize = 5;

type Failed = Box<dyn std::error::Error>;

/// One round's layout.
#[derive(Clone, Copy)]
enum Layout {
    Single,
    Services,
    /// The same files found by `**/project.yaml` (a walk of the tree).
    AnyDepth,
}

impl Layout {
    fn patterns(self) -> &'static str {
        match self {
            Layout::Single => "project.yaml",
            Layout::Services => "services/*/project.yaml",
            Layout::AnyDepth => "**/project.yaml",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Layout::Single => "single file (project.yaml)",
            Layout::Services => "several files (services/*/project.yaml, 5 a repository)",
            Layout::AnyDepth => "several files (**/project.yaml, the same 5 a repository)",
        }
    }
}

/// Whether the pushes' payloads list the paths each commit touched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// As GitHub sends them: the run may read only the touched files.
    Paths,
    /// Without `removed` lists: the run reads the repository whole.
    None,
}

/// What one round measured.
struct Round {
    latencies: Vec<Duration>,
    requests_per_push: f64,
}

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let (repos, pushes) = if full { (20, 40) } else { (3, 3) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!(
            "monorepo_push{}: {repos} repositories a round, {pushes} pushes at 1/s, {} ms added to every GitHub request",
            if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
            LATENCY.as_millis()
        );
        let single = round(Layout::Single, repos, pushes, Lists::Paths).await?;
        let several = round(Layout::Services, repos, pushes, Lists::Paths).await?;
        let any_depth = round(Layout::AnyDepth, repos, pushes, Lists::Paths).await?;
        let several_whole = round(Layout::Services, repos, pushes, Lists::None).await?;
        let any_depth_whole = round(Layout::AnyDepth, repos, pushes, Lists::None).await?;
        let p50 = |r: &Round| percentile(&r.latencies, 0.50);
        let ratio = ms(p50(&several)) / ms(p50(&single)).max(0.001);
        println!(
            "several / single p50: {ratio:.2}x{} {}",
            bench_mode::target("<= 1.2x"),
            bench_mode::verdict(ratio <= 1.2)
        );
        let any_ratio = ms(p50(&any_depth)) / ms(p50(&single)).max(0.001);
        println!("**/project.yaml / single p50: {any_ratio:.2}x");
        println!(
            "GitHub requests per push: single {:.2}, services/* {:.2}, ** {:.2}",
            single.requests_per_push, several.requests_per_push, any_depth.requests_per_push
        );
        println!(
            "requests per push read whole -> touched files only: services/* {:.2} -> {:.2}, ** {:.2} -> {:.2}",
            several_whole.requests_per_push,
            several.requests_per_push,
            any_depth_whole.requests_per_push,
            any_depth.requests_per_push
        );
        Ok(())
    })
}

async fn round(layout: Layout, repos: usize, pushes: usize, lists: Lists) -> Result<Round, Failed> {
    let fake = FakeGithub::start().await;
    fake.add_installation(INSTALLATION, ORG);
    let mut made = Vec::new();
    for n in 0..repos {
        let name = format!("mono-{n:03}");
        let id = fake.add_repo(INSTALLATION, &name);
        for path in paths(layout) {
            fake.push_file(id, &path, yaml(&path, n, "v0").as_bytes());
        }
        made.push(Repo::new(id, INSTALLATION, ORG, &name));
    }
    let (pool, url) = roster::db::testing::fresh_database().await?;
    let dir = tempfile::tempdir()?;
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_PROJECT_FILES", layout.patterns().to_owned()));
    fake.set_latency(LATENCY);
    let roster = Roster::start(&env, dir.path()).await;
    settle(&pool, repos).await?;

    let before = fake.total();
    let pushes_from = Instant::now();
    let mut latencies = Vec::with_capacity(pushes);
    for k in 0..pushes {
        let started = Instant::now();
        let n = k % repos;
        let repo = &made[n];
        let all = paths(layout);
        let path = all[(k / repos) % all.len()].clone();
        let old = fake.head(repo.id).unwrap_or_default();
        let new = fake.push_file(
            repo.id,
            &path,
            yaml(&path, n, &format!("v{}", k + 1)).as_bytes(),
        );
        let mut body = push_of_commits(repo, &old, &new, &[(&new, &[&path])]);
        if lists == Lists::None {
            let mut payload: serde_json::Value = serde_json::from_slice(&body)?;
            if let Some(commit) = payload["commits"][0].as_object_mut() {
                commit.remove("removed");
            }
            body = serde_json::to_vec(&payload)?;
        }
        let sent = Instant::now();
        let answer = deliver(&roster.base, "push", body).await;
        if answer.status.as_u16() != 202 {
            return Err(format!("a push was answered {}", answer.status).into());
        }
        latencies.push(synced(&pool, repo.id, &new, sent).await?);
        let pause = Duration::from_secs(1).saturating_sub(started.elapsed());
        tokio::time::sleep(pause).await;
    }
    let requests_per_push = (fake.total() - before) as f64 / pushes as f64;
    latencies.sort();
    match lists {
        Lists::Paths => println!("{}", layout.describe()),
        Lists::None => println!("{}, pushes read whole", layout.describe()),
    }
    println!(
        "  webhook to entry changed: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default())
    );
    let mut routes: std::collections::BTreeMap<&str, u64> = Default::default();
    for logged in fake.log().iter().filter(|l| l.at >= pushes_from) {
        *routes.entry(logged.route).or_default() += 1;
    }
    let routes: Vec<String> = routes
        .iter()
        .map(|(route, n)| format!("{route} {:.2}", *n as f64 / pushes as f64))
        .collect();
    println!(
        "  GitHub requests per push: {requests_per_push:.2} ({})",
        routes.join(", ")
    );
    drop(roster);
    Ok(Round {
        latencies,
        requests_per_push,
    })
}

/// The project files of each repository.
fn paths(layout: Layout) -> Vec<String> {
    match layout {
        Layout::Single => vec!["project.yaml".to_owned()],
        Layout::Services | Layout::AnyDepth => (0..SERVICES)
            .map(|s| format!("services/s{s}/project.yaml"))
            .collect(),
    }
}

/// A file declaring one entry named after its repository and path.
fn yaml(path: &str, n: usize, description: &str) -> String {
    let service = path
        .split('/')
        .nth(1)
        .filter(|_| path.starts_with("services/"));
    let name = match service {
        Some(s) => format!("mono-{n:03}-{s}"),
        None => format!("mono-{n:03}"),
    };
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

/// Until every repository is synced.
async fn settle(pool: &PgPool, repos: usize) -> Result<(), Failed> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let synced: i64 =
            sqlx::query_scalar("select count(*) from repositories where status = 'synced'")
                .fetch_one(pool)
                .await?;
        if synced as usize >= repos {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{synced} of {repos} repositories synced after 120 s").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The time from `sent` until repository `id` has synced commit `sha`.
async fn synced(pool: &PgPool, id: i64, sha: &str, sent: Instant) -> Result<Duration, Failed> {
    let deadline = sent + Duration::from_secs(30);
    loop {
        let at: Option<String> =
            sqlx::query_scalar("select synced_sha from repositories where id = $1")
                .bind(id)
                .fetch_one(pool)
                .await?;
        if at.as_deref() == Some(sha) {
            return Ok(sent.elapsed());
        }
        if Instant::now() > deadline {
            return Err(format!("repository {id} never synced {sha}").into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
