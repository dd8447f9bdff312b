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
//! `scripts/bench-smoke` runs it) a small smoke run keeps the suite fast:
//! 2 pushes a round, each several-file layout's two rounds on one
//! server, and the three layouts' servers side by side.

use roster_testkit::bench_mode;
use roster_testkit::fake_github;
use roster_testkit::github_app;

use std::time::{Duration, Instant};

use fake_github::{FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, push_of_commits, server_env, Repo};
use roster_testkit::server::Roster;
use roster_testkit::side_by_side::Lines;
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
    let (repos, pushes) = if full { (20, 40) } else { (3, 2) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!(
            "monorepo_push{}: {repos} repositories a round, {pushes} pushes at 1/s, {} ms added to every GitHub request",
            if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
            LATENCY.as_millis()
        );
        let (single, several, any_depth, several_whole, any_depth_whole) = if full {
            // Each round on a server and database of its own, one after
            // the other.
            let lines = &mut Lines::printed();
            let single = round(Layout::Single, repos, pushes, Lists::Paths, lines).await?;
            let several = round(Layout::Services, repos, pushes, Lists::Paths, lines).await?;
            let any_depth = round(Layout::AnyDepth, repos, pushes, Lists::Paths, lines).await?;
            let several_whole = round(Layout::Services, repos, pushes, Lists::None, lines).await?;
            let any_depth_whole = round(Layout::AnyDepth, repos, pushes, Lists::None, lines).await?;
            (single, several, any_depth, several_whole, any_depth_whole)
        } else {
            // A smoke run sends both kinds of push to one server per
            // layout, the three servers side by side.
            let mut lines = [Lines::kept(), Lines::kept(), Lines::kept()];
            let [one, services, any] = &mut lines;
            let both = [Lists::Paths, Lists::None];
            let (single, [several, several_whole], [any_depth, any_depth_whole]) = tokio::try_join!(
                round(Layout::Single, repos, pushes, Lists::Paths, one),
                rounds(Layout::Services, repos, pushes, both, services),
                rounds(Layout::AnyDepth, repos, pushes, both, any),
            )?;
            lines.into_iter().for_each(Lines::print);
            (single, several, any_depth, several_whole, any_depth_whole)
        };
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

/// [`measure`] with one kind of push: its one measurement.
async fn round(
    layout: Layout,
    repos: usize,
    pushes: usize,
    lists: Lists,
    lines: &mut Lines,
) -> Result<Round, Failed> {
    let mut measured = measure(layout, repos, pushes, &[lists], lines).await?;
    measured.pop().ok_or_else(|| "no round measured".into())
}

/// [`measure`] with two kinds of push, one after the other on one server.
async fn rounds(
    layout: Layout,
    repos: usize,
    pushes: usize,
    lists: [Lists; 2],
    lines: &mut Lines,
) -> Result<[Round; 2], Failed> {
    let measured = measure(layout, repos, pushes, &lists, lines).await?;
    <[Round; 2]>::try_from(measured).map_err(|_| "not two rounds measured".into())
}

/// Starts a server on a fresh database with `repos` repositories laid out
/// as `layout`, then sends `pushes` pushes of each kind of `lists`, one
/// kind after the other: what each kind measured.
async fn measure(
    layout: Layout,
    repos: usize,
    pushes: usize,
    lists: &[Lists],
    lines: &mut Lines,
) -> Result<Vec<Round>, Failed> {
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

    let mut measured = Vec::with_capacity(lists.len());
    for (kind, &lists) in lists.iter().enumerate() {
        let first = kind * pushes;
        let round = pushes_round(
            &fake, &roster, &pool, &made, layout, first, pushes, lists, lines,
        );
        measured.push(round.await?);
    }
    drop(roster);
    Ok(measured)
}

/// Sends pushes `first..first + pushes` of a round, one a second, each
/// once the one before is synced; what they measured, also told `lines`.
#[allow(clippy::too_many_arguments)]
async fn pushes_round(
    fake: &FakeGithub,
    roster: &Roster,
    pool: &PgPool,
    made: &[Repo],
    layout: Layout,
    first: usize,
    pushes: usize,
    lists: Lists,
    lines: &mut Lines,
) -> Result<Round, Failed> {
    let repos = made.len();
    let before = fake.total();
    let pushes_from = Instant::now();
    let mut latencies = Vec::with_capacity(pushes);
    for k in first..first + pushes {
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
        latencies.push(synced(pool, repo.id, &new, sent).await?);
        let pause = Duration::from_secs(1).saturating_sub(started.elapsed());
        tokio::time::sleep(pause).await;
    }
    let requests_per_push = (fake.total() - before) as f64 / pushes as f64;
    latencies.sort();
    match lists {
        Lists::Paths => lines.line(layout.describe()),
        Lists::None => lines.line(format!("{}, pushes read whole", layout.describe())),
    }
    lines.line(format!(
        "  webhook to entry changed: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default())
    ));
    let mut routes: std::collections::BTreeMap<&str, u64> = Default::default();
    for logged in fake.log().iter().filter(|l| l.at >= pushes_from) {
        *routes.entry(logged.route).or_default() += 1;
    }
    let routes: Vec<String> = routes
        .iter()
        .map(|(route, n)| format!("{route} {:.2}", *n as f64 / pushes as f64))
        .collect();
    lines.line(format!(
        "  GitHub requests per push: {requests_per_push:.2} ({})",
        routes.join(", ")
    ));
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
