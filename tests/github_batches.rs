//! The real `roster serve` against the fake GitHub: triggers that name many
//! repositories cost about one request per 100 of them, and a spent rate
//! limit makes repositories wait (`pending`), never fail (`error`).

use crate::support;
use support::fake_github;
use support::github_app;

use std::time::Duration;

use fake_github::{routes, FakeGithub, Fault, FaultKind, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, push, server_env, Repo};
use serde_json::Value;
use sqlx::PgPool;
use support::http::get;
use support::server::{eventually, Roster};

const FILE: &str = "project.yaml";
const LIMIT: Duration = Duration::from_secs(60);

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    roster: Roster,
    _dir: tempfile::TempDir,
}

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

async fn start(fake: FakeGithub) -> Env {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    let roster = Roster::start(&env, dir.path()).await;
    Env {
        fake,
        pool,
        roster,
        _dir: dir,
    }
}

impl Env {
    async fn repo(&self, full_name: &str) -> Option<Value> {
        let answer = get(&self.roster.url(&format!("/api/v1/repos/{full_name}")))
            .await
            .ok()?;
        answer.status.is_success().then(|| answer.json())
    }

    /// Waits until `count` repositories are known and none is pending or
    /// queued; the statuses then, with their counts.
    async fn settled(&self, count: i64) -> Vec<(String, i64)> {
        eventually("every repository reconciled", LIMIT, || async {
            let queued: i64 = sqlx::query_scalar("select count(*) from queue")
                .fetch_one(&self.pool)
                .await
                .ok()?;
            let statuses: Vec<(String, i64)> = sqlx::query_as(
                "select status, count(*) from repositories group by status order by status",
            )
            .fetch_all(&self.pool)
            .await
            .ok()?;
            let known: i64 = statuses.iter().map(|(_, n)| n).sum();
            let pending = statuses.iter().any(|(s, _)| s == "pending");
            (queued == 0 && known == count && !pending).then_some(statuses)
        })
        .await
    }

    /// Requests that read repositories outside the listing.
    fn reads(&self) -> u64 {
        [
            routes::GRAPHQL_READ,
            routes::REPO_BY_ID,
            routes::REPO,
            routes::COMMIT,
            routes::CONTENTS,
        ]
        .iter()
        .map(|r| self.fake.count(r))
        .sum()
    }

    /// Requests made with an installation's token or to get one (the
    /// delivery log, which the App reads on its own schedule, left out).
    fn installation_requests(&self) -> u64 {
        self.reads()
            + self.fake.count(routes::GRAPHQL)
            + self.fake.count(routes::ACCESS_TOKENS)
            + self.fake.count(routes::INSTALLATIONS)
    }
}

#[tokio::test]
async fn an_installation_of_500_repositories_should_cost_about_one_request_per_hundred() {
    const REPOS: usize = 500;
    let env = start(FakeGithub::start().await).await;
    // The start-up listing finds no installation yet.
    eventually("the start-up listing", LIMIT, || async {
        env.roster.logs().contains("listing done").then_some(())
    })
    .await;

    env.fake.add_installation(7, "initech");
    let mut repos = Vec::new();
    for n in 0..REPOS {
        let name = format!("svc-{n:03}");
        let id = if n % 5 == 0 {
            env.fake
                .add_repo_with_file(7, &name, FILE, &yaml(&name, "installed"))
        } else {
            env.fake.add_repo(7, &name)
        };
        repos.push(Repo::new(id, 7, "initech", &name));
    }
    env.fake.reset_counts();

    let answer = deliver(
        &env.roster.base,
        "installation",
        installation_created(7, "initech", &repos),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);

    let statuses = env.settled(REPOS as i64).await;
    assert_eq!(
        statuses,
        vec![("no_file".to_owned(), 400), ("synced".to_owned(), 100)]
    );
    let pages = env.fake.count(routes::GRAPHQL);
    let used = env.installation_requests();
    println!("installation of {REPOS}: {used} requests ({pages} listing pages)");
    assert_eq!(pages, REPOS.div_ceil(100) as u64);
    assert_eq!(env.reads(), 0, "no repository was read on its own");
    // The pages, the installations list and one token.
    assert!(used <= pages + 3, "{used} requests");
}

#[tokio::test]
async fn three_hundred_pushes_at_once_should_cost_a_few_requests() {
    const REPOS: usize = 300;
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let mut repos = Vec::new();
    for n in 0..REPOS {
        let name = format!("svc-{n:03}");
        let id = fake.add_repo_with_file(1, &name, FILE, &yaml(&name, "v0"));
        repos.push(Repo::new(id, 1, "acme", &name));
    }
    let env = start(fake).await;
    env.settled(REPOS as i64).await;

    // The first two reads take a while, as on a slow day: the pushes that
    // arrive meanwhile wait in the queue, and the next reads take them all.
    env.fake
        .inject(Fault::next(FaultKind::Slow(Duration::from_secs(5)), 2).on(routes::GRAPHQL_READ));
    env.fake.reset_counts();
    let mut heads = Vec::new();
    let mut sent = tokio::task::JoinSet::new();
    for repo in &repos {
        let before = env.fake.head(repo.id).unwrap_or_default();
        let after = env
            .fake
            .push_file(repo.id, FILE, yaml(&repo.name, "v1").as_bytes());
        heads.push(after.clone());
        let (base, body) = (env.roster.base.clone(), push(repo, &before, &after));
        sent.spawn(async move { deliver(&base, "push", body).await.status.as_u16() });
        if sent.len() >= 16 {
            if let Some(status) = sent.join_next().await {
                assert_eq!(status.expect("a sender"), 202);
            }
        }
    }
    while let Some(status) = sent.join_next().await {
        assert_eq!(status.expect("a sender"), 202);
    }

    eventually("every push applied", LIMIT, || async {
        let applied: i64 =
            sqlx::query_scalar("select count(*) from repositories where synced_sha = any($1)")
                .bind(&heads)
                .fetch_one(&env.pool)
                .await
                .ok()?;
        (applied == REPOS as i64).then_some(())
    })
    .await;
    let reads = env.reads();
    println!("{REPOS} pushes: {reads} reads");
    assert!(reads <= 20, "{reads} reads for {REPOS} pushes");
    assert_eq!(env.fake.count(routes::REPO_BY_ID), 0, "all read in batches");
}

#[tokio::test]
async fn a_spent_budget_should_leave_repositories_pending_until_the_reset_not_in_error() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(1, "checkout", FILE, &yaml("checkout-api", "before"));
    let env = start(fake).await;
    let before = eventually("synced", LIMIT, || async {
        env.repo("acme/checkout")
            .await
            .filter(|r| r["status"] == "synced")
    })
    .await;

    env.fake.set_remaining(1, "graphql", 0);
    let sha = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "after").as_bytes());
    let old = before["synced_sha"].as_str().unwrap_or_default();
    let answer = deliver(
        &env.roster.base,
        "push",
        push(&Repo::new(id, 1, "acme", "checkout"), old, &sha),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);

    let waiting = eventually("waiting for the rate limit", LIMIT, || async {
        env.repo("acme/checkout")
            .await
            .filter(|r| r["status"] == "pending")
    })
    .await;
    let message = waiting["error"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("waiting for GitHub's rate limit, resets at ")
            && message.ends_with(" UTC"),
        "{waiting}"
    );
    assert_eq!(waiting["attempts"], 0, "not counted as a failure");
    assert_eq!(waiting["synced_sha"], before["synced_sha"]);
    assert!(
        waiting["events"]
            .as_array()
            .is_some_and(|e| e.iter().all(|e| e["kind"] != "error")),
        "{waiting}"
    );
    let entry = get(&env.roster.url("/api/v1/projects/checkout-api"))
        .await
        .expect("the entry")
        .json();
    assert_eq!(entry["description"], "before", "entries kept");

    // The queue retries at the reset, without counting an attempt.
    let (attempts, wait): (i32, f64) = sqlx::query_as(
        "select attempts, extract(epoch from not_before - now())::float8 from queue where repo_id = $1",
    )
    .bind(id)
    .fetch_one(&env.pool)
    .await
    .expect("the id waits in the queue");
    assert_eq!(attempts, 0);
    assert!(wait > 3000.0 && wait <= 3600.0, "retried in {wait} s");

    // The dashboard shows the wait.
    let page = get(&env.roster.url("/repos/acme/checkout"))
        .await
        .expect("the repository page");
    let shown = page.body.split("problem-panel").nth(1).unwrap_or_default();
    assert!(shown.contains("<h2>Waiting</h2>"), "{}", page.body);
    assert!(shown.contains("s rate limit, resets at "), "{}", page.body);
}

#[tokio::test]
async fn a_low_budget_should_pace_pushes_never_stop_them() {
    // 200 of 5,000 GraphQL points left for the hour: below the low-water
    // mark, so reads are spread over the window, but each push is still
    // read while points remain.
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    fake.set_budget(1, "graphql", 5_000, 200, Duration::from_secs(3_600));
    let id = fake.add_repo_with_file(1, "checkout", FILE, &yaml("checkout-api", "v0"));
    let env = start(fake).await;
    let mut head = eventually("synced", LIMIT, || async {
        env.repo("acme/checkout")
            .await
            .filter(|r| r["status"] == "synced")
    })
    .await["synced_sha"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    for n in 1..=3 {
        let sha = env
            .fake
            .push_file(id, FILE, yaml("checkout-api", &format!("v{n}")).as_bytes());
        let answer = deliver(
            &env.roster.base,
            "push",
            push(&Repo::new(id, 1, "acme", "checkout"), &head, &sha),
        )
        .await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        eventually(&format!("push {n} synced"), LIMIT, || async {
            env.repo("acme/checkout")
                .await
                .filter(|r| r["status"] == "synced" && r["synced_sha"] == sha.as_str())
        })
        .await;
        head = sha;
    }
    let left = env.fake.remaining(1, "graphql");
    assert!(left > 0 && left < 200, "points spent, some left: {left}");
}
