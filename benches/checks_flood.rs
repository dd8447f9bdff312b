//! A flood of pull requests against a low GitHub budget, in process: the
//! real webhook route, checks loop and registry handler on a fresh
//! PostgreSQL, and the fake GitHub with a window of 5,000 requests of which
//! 1,200 are left, resetting in 180 s (GitHub's windows last an hour; the
//! fake's is shortened so that the run ends).
//!
//! 1,200 `pull_request` `opened` deliveries arrive as fast as the route
//! takes them while the checks loop runs; 3 s after the last one, a push
//! changes the project file of the default branch. Measured: the time from
//! the push until its reconcile has synced it (retried every 50 ms, as a
//! worker would after each failure, so a budget spent shows as the wait
//! for the reset), and the requests the checks spent.
//!
//! Two runs: "unbounded" turns the checks' budget off (no reserve, no
//! spacing of evaluations or writes: how checks ran before), "bounded" is
//! the default.
//!
//! `cargo bench --bench checks_flood` runs the full size; without
//! `--bench` (as `scripts/bench-smoke` runs it) a small smoke run keeps
//! the suite fast: 20 deliveries, the push 1 s after the last, the two runs
//! side by side.

use roster_testkit::registry::{handler, queue};
use roster_testkit::side_by_side::Lines;
use roster_testkit::{fake_github, pull_requests};

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use fake_github::{routes, FakeGithub};
use prometheus_client::registry::Registry;
use roster::checks::{ChecksMode, ChecksWorker};
use roster::controller::{Handler, Storage};
use roster::github::{GithubOptions, GithubSource};
use roster::intake::{self, WebhookLimits, WebhookState};
use roster::metrics::Metrics;
use roster::source::RepoId;
use secrecy::SecretString;

const FILE: &str = "project.yaml";
const ACME: i64 = 1;
const SECRET: &str = "flood-secret";
const LIMIT: u64 = 5_000;
const LEFT: u64 = 1_200;
const WINDOW: Duration = Duration::from_secs(180);

type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let full = roster_testkit::bench_mode::full();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let pulls = if full { 1_200 } else { 20 };
    // How long the checks loop works on the deliveries before the push.
    let pause = if full {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(1)
    };
    if !full {
        println!("checks_flood (smoke run; `cargo bench` runs the full size)");
    }
    if full {
        for bounded in [false, true] {
            runtime.block_on(run(pulls, bounded, pause, &mut Lines::printed()))?;
        }
    } else {
        // Side by side, each with its own fake GitHub and database.
        let mut lines = [Lines::kept(), Lines::kept()];
        let [unbounded, bounded] = &mut lines;
        runtime.block_on(async {
            tokio::try_join!(
                run(pulls, false, pause, unbounded),
                run(pulls, true, pause, bounded)
            )
        })?;
        lines.into_iter().for_each(Lines::print);
    }
    Ok(())
}

fn yaml(description: &str) -> String {
    format!("name: amp\nowner: team-amp\ndescription: {description}\n")
}

async fn run(pulls: i64, bounded: bool, pause: Duration, lines: &mut Lines) -> Result<(), Failed> {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let id = fake.add_repo_with_file(ACME, "amp", FILE, &yaml("v1"));
    let (pool, _url) = roster::db::testing::fresh_database().await?;
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let settings = roster::config::GithubAppSettings {
        webhook_secret: SecretString::from(SECRET.to_owned()),
        ..fake.settings()
    };
    let source = GithubSource::connect_with(
        &settings,
        FILE,
        pool.clone(),
        metrics.clone(),
        GithubOptions::default(),
    )
    .await?;
    let queue = queue(&pool);
    let handler = handler(&pool, queue.clone());
    let storage = source.storage();
    let hooks = roster::web::router::webhook(WebhookState {
        pool: pool.clone(),
        queue,
        secret: SecretString::from(SECRET.to_owned()),
        metrics,
        limits: WebhookLimits::default(),
        free_pushes: None,
        shutdown: roster::shutdown::channel().1,
    });
    let mut worker = ChecksWorker::new(pool.clone(), source.checks(), ChecksMode::All);
    if !bounded {
        worker.budget.reserve = false;
        worker.budget.evaluation_spacing = Duration::ZERO;
        worker.budget.post_spacing = Duration::ZERO;
    }
    let reconcile = || async {
        let state = storage.get(&RepoId(id), None).await;
        handler.apply(&RepoId(id), state).await.unwrap_or("failed")
    };
    if reconcile().await != "synced" {
        return Err("the repository did not sync".into());
    }
    for resource in ["core", "graphql"] {
        fake.set_budget(ACME, resource, LIMIT, LEFT, WINDOW);
    }
    // Roster learns the low budget from its next answer.
    if reconcile().await != "synced" {
        return Err("the repository did not sync again".into());
    }
    let heads: Vec<String> = (0..pulls)
        .map(|k| fake.pr_commit(id, FILE, yaml(&format!("pr {k}")).as_bytes()))
        .collect();
    fake.reset_counts();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let checks = tokio::spawn(worker.run(async {
        let _ = stopped.await;
    }));
    let started = Instant::now();
    for (k, sha) in heads.iter().enumerate() {
        let pr = pull_requests::Pr {
            repo: id,
            installation: ACME,
            owner: "acme",
            name: "amp",
            number: k as i64 + 1,
            sha,
            base: "main",
        };
        let body = pull_requests::pull_request("opened", &pr);
        let request = Request::post(intake::PATH)
            .header("content-type", "application/json")
            .header("x-github-event", "pull_request")
            .header("x-github-delivery", format!("flood-{k}"))
            .header("x-hub-signature-256", intake::sign(SECRET, &body))
            .body(Body::from(body))?;
        let answer = roster_testkit::router::send(&hooks, request).await;
        if answer.status != 202 {
            return Err(format!("a delivery was answered {}", answer.status).into());
        }
    }
    let delivered = started.elapsed();
    tokio::time::sleep(pause).await;
    let spent_before_push = fake.total();

    fake.push_file(id, FILE, yaml("pushed").as_bytes());
    let pushed = Instant::now();
    let mut tries = 0;
    while reconcile().await != "synced" {
        tries += 1;
        if pushed.elapsed() > WINDOW * 2 {
            return Err("the push never synced".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let latency = pushed.elapsed();
    let _ = stop.send(());
    let _ = checks.await;
    lines.line(format!(
        "checks_flood, {}: {pulls} pull requests delivered in {} ms; {LEFT} of {LIMIT} requests left, window resets in {} s",
        if bounded { "bounded (default)" } else { "unbounded (budget off, as before)" },
        delivered.as_millis(),
        WINDOW.as_secs()
    ));
    lines.line(format!(
        "  checks spent {spent_before_push} requests before the push ({} file reads, {} run writes); left: {} REST, {} GraphQL",
        fake.count(routes::GRAPHQL_FILE),
        fake.count(routes::CHECK_RUN_CREATE) + fake.count(routes::CHECK_RUN_UPDATE),
        fake.remaining(ACME, "core"),
        fake.remaining(ACME, "graphql"),
    ));
    lines.line(format!(
        "  push -> synced: {} ms ({tries} reconciles retried before it synced)",
        latency.as_millis()
    ));
    Ok(())
}
