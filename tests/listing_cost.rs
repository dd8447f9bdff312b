//! One trigger, one listing (docs/contract.md), counted request by request against
//! the fake GitHub: an installation webhook lists the installation once and
//! applies what its pages read without reading a repository again; a second
//! listing of an organisation where nothing changed costs its pages alone;
//! a resync asked for during a listing costs at most one more listing.

use crate::support;
use support::fake_github;
use support::github_app;
use support::github_counts::{check_requests, rest_reads, settle};

use std::time::Duration;

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, resync, server_env, Repo};
use support::server::{eventually, Roster};

const ACME: i64 = 1;
const REPOS: usize = 300;
const LIMIT: Duration = Duration::from_secs(60);

/// What the installation's requests went to, by kind.
#[derive(Debug, PartialEq, Eq)]
struct Spent {
    pages: u64,
    reads: u64,
    trees: u64,
    checks: u64,
}

fn spent(fake: &FakeGithub) -> Spent {
    Spent {
        pages: fake.count(routes::GRAPHQL),
        reads: fake.count(routes::GRAPHQL_READ) + rest_reads(fake),
        trees: fake.count(routes::GIT_TREE) + fake.count(routes::GRAPHQL_BLOBS),
        checks: check_requests(fake),
    }
}

/// 300 repositories, one in ten with a project file.
fn populate(fake: &FakeGithub) -> Vec<Repo> {
    (0..REPOS)
        .map(|n| {
            let name = format!("svc-{n:03}");
            let id = if n % 10 == 0 {
                let yaml = format!("name: {name}\nowner: team-{name}\n");
                fake.add_repo_with_file(ACME, &name, "project.yaml", &yaml)
            } else {
                fake.add_repo(ACME, &name)
            };
            Repo::new(id, ACME, "acme", &name)
        })
        .collect()
}

async fn start(fake: &FakeGithub) -> (Roster, sqlx::PgPool, tempfile::TempDir) {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    let roster = Roster::start(&env, dir.path()).await;
    (roster, pool, dir)
}

/// Waits until `count` listings are done, nothing is asked for and every
/// repository is final.
async fn quiet(roster: &Roster, pool: &sqlx::PgPool, count: usize) {
    eventually("the listings done", LIMIT, || async {
        (roster.logs().matches("listing done").count() >= count).then_some(())
    })
    .await;
    let requested: bool = sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("the schedule");
    assert!(!requested, "no listing left asked for");
    settle(pool, REPOS, LIMIT)
        .await
        .expect("every repository final");
}

#[tokio::test]
async fn an_installation_webhook_should_cost_its_pages_and_a_second_listing_nothing_more() {
    let fake = FakeGithub::start().await;
    let (roster, pool, _dir) = start(&fake).await;
    // The App is not installed yet: the start-up listing finds nothing.
    quiet_start(&roster).await;
    fake.add_installation(ACME, "acme");
    let repos = populate(&fake);
    fake.reset_counts();

    let answer = deliver(
        &roster.base,
        "installation",
        installation_created(ACME, "acme", &repos),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    quiet(&roster, &pool, 2).await;
    let install = spent(&fake);
    assert_eq!(
        install,
        Spent {
            pages: 3,
            reads: 0,
            trees: 0,
            checks: install.checks
        },
        "one listing of three pages, its hints applied"
    );
    assert_eq!(roster.logs().matches("listing done").count(), 2);

    // Nothing changed: the next listing costs its three pages alone.
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    quiet(&roster, &pool, 3).await;
    assert_eq!(
        spent(&fake),
        Spent {
            pages: 3,
            reads: 0,
            trees: 0,
            checks: 0
        },
        "an unchanged organisation's listing: its pages alone"
    );
}

#[tokio::test]
async fn an_installation_webhook_during_a_listing_that_found_it_should_not_list_it_again() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let repos = populate(&fake);
    // Each page takes a while, so the webhook arrives during the listing.
    fake.set_latency(Duration::from_millis(300));
    let (roster, pool, _dir) = start(&fake).await;
    eventually("the listing's first page", LIMIT, || async {
        (fake.count(routes::GRAPHQL) > 0).then_some(())
    })
    .await;
    let answer = deliver(
        &roster.base,
        "installation",
        installation_created(ACME, "acme", &repos),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    quiet(&roster, &pool, 1).await;
    let spent = spent(&fake);
    assert_eq!(
        (spent.pages, spent.reads),
        (3, 0),
        "the listing under way serves the installation: {spent:?}"
    );
    assert_eq!(roster.logs().matches("listing done").count(), 1);
}

#[tokio::test]
async fn resyncs_asked_for_during_a_listing_should_cost_at_most_one_more_listing() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    populate(&fake);
    fake.set_latency(Duration::from_millis(300));
    let (roster, pool, _dir) = start(&fake).await;
    eventually("the listing's first page", LIMIT, || async {
        (fake.count(routes::GRAPHQL) > 0).then_some(())
    })
    .await;
    for _ in 0..3 {
        assert_eq!(resync(&roster.base).await.status, 202);
    }
    quiet(&roster, &pool, 2).await;
    let spent = spent(&fake);
    assert!(
        spent.pages <= 6,
        "the listing and at most one more: {spent:?}"
    );
    // Repositories being applied when the second listing's answer came run
    // again with it: nothing newer was applied meanwhile, so no read.
    assert_eq!(
        spent.reads, 0,
        "the second listing's hints applied: {spent:?}"
    );
}

/// The start-up listing of an App installed nowhere, done.
async fn quiet_start(roster: &Roster) {
    eventually("the start-up listing", LIMIT, || async {
        roster.logs().contains("listing done").then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_listing_asked_for_while_the_last_ones_answers_are_applied_should_apply_its_own() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    populate(&fake);
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    // One repository at a time: the listing's answers take a while to
    // apply, and the next listing's pages are asked for meanwhile.
    env.push(("ROSTER_WORKERS", "1".to_owned()));
    env.push(("ROSTER_BATCH_SIZE", "1".to_owned()));
    let roster = Roster::start(&env, dir.path()).await;
    quiet_start(&roster).await;
    let applied: i64 = sqlx::query_scalar("select count(*) from queue")
        .fetch_one(&pool)
        .await
        .expect("the queue");
    assert!(applied > 0, "the first listing's answers are still queued");
    // Each page of the next listing is answered late: the first listing's
    // answers are applied after the next one's pages were asked for.
    fake.set_latency(Duration::from_millis(700));
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    quiet(&roster, &pool, 2).await;
    // The one repository being applied when a page of the second listing
    // enqueued it runs again without that answer (the queue drops a hint
    // that arrives during a claim) and is read: one read a page at most
    // (26 reads before a listing's answer stopped moving `observed_at`).
    let spent = spent(&fake);
    assert_eq!(spent.pages, 3, "{spent:?}");
    assert!(
        spent.reads <= 3,
        "the second listing's answers applied as they are: {spent:?}"
    );
}
