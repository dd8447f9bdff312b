//! Pull request checks against the real `roster serve` (release build
//! under `cargo bench`) and the fake GitHub with 50 ms added to every
//! request, on a fresh PostgreSQL database.
//!
//! 200 pull requests (10 per repository, 20 repositories) are opened at
//! 10 a second, each changing the project file. Measured: the time from
//! sending the `pull_request` `opened` delivery until the fake GitHub has
//! the completed `Roster` check run on its head (p50, p99), and the GitHub
//! requests spent per pull request (the file read, the run's create or
//! update, tokens). Targets: p50 about 200 ms, at most 3 requests per
//! evaluation (annotation batches aside).
//!
//! Then the same again with every pull request naming an owner that is no
//! team of the organisation (`tem-service-00`, the organisation's teams
//! being `team-service-00` …, read by the start-up listing): each run
//! carries the owner line's `warning` annotation with the nearest slug
//! (`ROSTER_OWNERS=warn`, the default). Measured the same way.
//!
//! `cargo bench --bench checks_latency` runs the full size; without
//! `--bench` (as `scripts/bench-smoke` runs it) a small smoke run keeps
//! the suite fast.

use roster_testkit::bench_mode;
use roster_testkit::{fake_github, github_app, pull_requests};

use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, server_env};
use roster_testkit::server::Roster;

const LATENCY: Duration = Duration::from_millis(50);
const FILE: &str = "project.yaml";
const ORG: &str = "acme";
const INSTALLATION: i64 = 1;
const REPOS: usize = 20;
/// Pull requests opened per second (`CHECKS_LATENCY_RATE` sets another:
/// checks post at most one run a second per installation, so a rate above
/// one measures that pacing more than the latency).
const RATE: f64 = 10.0;

/// `CHECKS_LATENCY_RATE`, or [`RATE`].
fn rate() -> f64 {
    std::env::var("CHECKS_LATENCY_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|r: &f64| *r > 0.0)
        .unwrap_or(RATE)
}

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // `CHECKS_LATENCY_PULLS` sets how many pull requests each round opens.
    let pulls = std::env::var("CHECKS_LATENCY_PULLS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(if full {
            200
        } else if bench_mode::tiny() {
            // Runs post one a second: each round takes about a second a
            // pull request.
            2
        } else {
            20
        });
    runtime.block_on(run(pulls, full))
}

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

async fn run(pulls: usize, full: bool) -> Result<(), Failed> {
    let fake = FakeGithub::start().await;
    fake.add_installation(INSTALLATION, ORG);
    let mut repos = Vec::new();
    for n in 0..REPOS {
        let name = format!("service-{n:02}");
        let id = fake.add_repo_with_file(INSTALLATION, &name, FILE, &yaml(&name, "v0"));
        fake.add_team(INSTALLATION, &format!("team-{name}"), false);
        repos.push((id, name));
    }
    let (pool, url) = roster::db::testing::fresh_database().await?;
    let dir = tempfile::tempdir()?;
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    println!(
        "checks_latency{}: {pulls} pull requests opened at {}/s on {REPOS} repositories, {} ms added to every GitHub request",
        if full { "" } else { " (smoke run; `cargo bench` runs the full size)" },
        rate(),
        LATENCY.as_millis()
    );
    let roster = Roster::start(&env, dir.path()).await;
    // The start-up listing syncs every repository and posts the default
    // branch's runs; wait for both before measuring.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (synced, pending, teams): (i64, i64, i64) = sqlx::query_as(
            "select (select count(*) from repositories where status = 'synced'),
                    (select count(*) from check_runs where pending),
                    (select count(*) from directory_teams)",
        )
        .fetch_one(&pool)
        .await?;
        if synced == REPOS as i64 && pending == 0 && teams == REPOS as i64 {
            break;
        }
        if Instant::now() > deadline {
            return Err("the repositories were not synced within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fake.set_latency(LATENCY);
    let owned = |name: &str, k: usize| yaml(name, &format!("pr {k}"));
    phase(&fake, &roster.base, &repos, pulls, 0, &owned).await?;
    let unknown =
        |name: &str, k: usize| format!("name: {name}\nowner: tem-{name}\ndescription: pr {k}\n");
    println!("  every pull request naming an owner that is no team (a warning annotation each):");
    let heads = phase(&fake, &roster.base, &repos, pulls, pulls, &unknown).await?;
    let (id, name, _, sha) = &heads[0];
    let runs = fake.check_runs_on(*id, sha);
    let note = runs
        .first()
        .and_then(|r| r.annotations.first().cloned())
        .ok_or("no annotation on the run of an unknown owner")?;
    let expected =
        format!("owner: no team or member \"tem-{name}\" in {ORG} (did you mean team-{name}");
    let message = note["message"].as_str().unwrap_or_default();
    if !message.starts_with(&expected) || note["annotation_level"] != "warning" {
        return Err(format!("the owner's annotation reads {note}, not {expected:?}").into());
    }
    println!(
        "  annotation: {} on line {}",
        note["message"], note["start_line"]
    );
    drop(roster);
    Ok(())
}

/// Opens `pulls` pull requests (numbered after `first`) at [`rate`] a
/// second, each with the file `file(name, k)`, and prints how long each
/// took to get its completed run and what GitHub requests they cost.
async fn phase(
    fake: &FakeGithub,
    base: &str,
    repos: &[(i64, String)],
    pulls: usize,
    first: usize,
    file: &dyn Fn(&str, usize) -> String,
) -> Result<Vec<(i64, String, i64, String)>, Failed> {
    fake.reset_counts();

    let mut heads = Vec::with_capacity(pulls);
    for k in 0..pulls {
        let (id, name) = &repos[k % REPOS];
        let sha = fake.pr_commit(*id, FILE, file(name, first + k).as_bytes());
        heads.push((*id, name.clone(), (first + k) as i64 + 1, sha));
    }
    let started = Instant::now();
    let mut senders = Vec::with_capacity(pulls);
    for (k, (id, name, number, sha)) in heads.iter().cloned().enumerate() {
        let at = started + Duration::from_secs_f64(k as f64 / rate());
        let base = base.to_owned();
        senders.push(tokio::spawn(async move {
            tokio::time::sleep_until(at.into()).await;
            let pr = pull_requests::Pr {
                repo: id,
                installation: INSTALLATION,
                owner: ORG,
                name: &name,
                number,
                sha: &sha,
                base: "main",
            };
            let sent = Instant::now();
            let answer = deliver(
                &base,
                "pull_request",
                pull_requests::pull_request("opened", &pr),
            )
            .await;
            (sent, answer.status.as_u16())
        }));
    }
    let mut sent = Vec::with_capacity(pulls);
    for sender in senders {
        let (at, status) = sender.await?;
        if status != 202 {
            return Err(format!("a pull_request delivery was answered {status}").into());
        }
        sent.push(at);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut latencies = Vec::with_capacity(pulls);
    while latencies.len() < pulls {
        // One look at the fake per poll: copying its runs for every head
        // would take the fake's lock from the requests being measured.
        let done = fake.completed_runs();
        latencies = heads
            .iter()
            .zip(&sent)
            .filter_map(|((id, _, _, sha), at)| {
                let created = done.get(&(*id, sha.clone()))?;
                Some(created.saturating_duration_since(*at))
            })
            .collect();
        if Instant::now() > deadline {
            return Err(format!("{} of {pulls} runs after 120 s", latencies.len()).into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    latencies.sort();
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    let reads = fake.count(routes::GRAPHQL_FILE);
    let writes = fake.count(routes::CHECK_RUN_CREATE) + fake.count(routes::CHECK_RUN_UPDATE);
    let lists = fake.count(routes::CHECK_RUNS_FOR_REF);
    let tokens = fake.token_creations();
    let total = fake.total();
    println!(
        "  PR opened -> check run completed: p50 {} ms, p99 {} ms, max {} ms{}",
        pick(0.5).as_millis(),
        pick(0.99).as_millis(),
        latencies[latencies.len() - 1].as_millis(),
        bench_mode::target("p50 ~ 200 ms")
    );
    println!(
        "  GitHub requests: {total} for {pulls} pull requests = {:.2} per evaluation{}: \
         {reads} file reads, {writes} run writes, {lists} run look-ups, {tokens} tokens",
        total as f64 / pulls as f64,
        bench_mode::target("<= 3")
    );
    Ok(heads)
}
