//! A secondary rate limit pauses every request made with that
//! installation's token, REST and GraphQL alike, until its wait is over
//! (docs/contract.md#bounds); other installations go on. Against the fake GitHub, which logs
//! when each request reached it.

use crate::support;
use crate::support::registry::installed_repo;
use support::fake_github;

use std::sync::Arc;
use std::time::Duration;

use fake_github::{routes, FakeGithub, Fault, FaultKind, Logged};
use prometheus_client::registry::Registry;
use roster::controller::{Failure, Listed, Lister, Storage};

/// What a listing found in one installation.
type Partition = Listed<RepoId, roster::source::Partition>;
use roster::db::testing::fresh_database;
use roster::github::{GithubOptions, GithubSource};
use roster::metrics::Metrics;
use roster::registry::ensure_known;
use roster::source::{Observed, RepoId};
use sqlx::PgPool;

const FILE: &str = "project.yaml";

/// Slack for reading two clocks (the fake's arrival times and the client's
/// wall clock) a few microseconds apart.
const CLOCK_SLACK: Duration = Duration::from_millis(10);

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    source: GithubSource,
}

/// A fake GitHub with the given installations, a fresh database, and a
/// source connected to both.
async fn env(installations: &[(i64, &str)]) -> Env {
    let fake = FakeGithub::start().await;
    for (id, login) in installations {
        fake.add_installation(*id, login);
    }
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let source = GithubSource::connect_with(
        &fake.settings(),
        FILE,
        pool.clone(),
        metrics,
        GithubOptions::default(),
    )
    .await
    .expect("connect");
    Env { fake, pool, source }
}

impl Env {
    /// A repository with a project file, known to the registry under its
    /// installation (so a read asks that installation first).
    async fn repo(&self, installation: i64, login: &str, name: &str) -> i64 {
        let id = self
            .fake
            .add_repo_with_file(installation, name, FILE, "name: x\nowner: y\n");
        let info = installed_repo(login, name, installation);
        ensure_known(&self.pool, &[(RepoId(id), info)])
            .await
            .expect("ensure_known");
        id
    }

    async fn read(&self, id: i64) -> Result<Observed, Failure> {
        self.source.storage().get(&RepoId(id), None).await
    }

    async fn list(&self) -> Vec<Partition> {
        self.source.lister().list().await.expect("listing")
    }

    /// Requests of `route` that reached the fake with `installation`'s token.
    fn arrived(&self, route: &str, installation: i64) -> Vec<Logged> {
        self.fake
            .log()
            .into_iter()
            .filter(|l| l.route == route && l.installation == Some(installation))
            .collect()
    }
}

fn outcome(partitions: &[Partition], installation: i64) -> Result<(), Failure> {
    let name = format!("installation/{installation}");
    partitions
        .iter()
        .find(|p| p.partition.to_string() == name)
        .unwrap_or_else(|| panic!("no partition {name}"))
        .outcome
        .clone()
}

#[tokio::test]
async fn a_secondary_limit_on_rest_should_hold_graphql_of_that_installation_until_its_wait_is_over()
{
    let env = env(&[(1, "acme"), (2, "globex")]).await;
    let busy = env.repo(1, "acme", "busy").await;
    let calm = env.repo(2, "globex", "calm").await;
    env.fake.inject(
        Fault::next(FaultKind::SecondaryRateLimit { retry_after: 3 }, 1).on(routes::REPO_BY_ID),
    );

    let failure = env.read(busy).await.expect_err("rate limited");
    assert_eq!(failure.retry_after, Some(Duration::from_secs(3)));
    assert!(
        failure.message().contains("secondary rate limit"),
        "{failure}"
    );
    let limited = env.arrived(routes::REPO_BY_ID, 1);
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0].status, 403);

    // At once: installation 1's listing is held back, installation 2's goes.
    let partitions = env.list().await;
    let held = outcome(&partitions, 1).expect_err("held by the pause");
    assert!(held.message().contains("rate limit"), "{held}");
    assert!(
        held.retry_after
            .is_some_and(|w| w > Duration::from_secs(2) && w <= Duration::from_secs(3)),
        "{held:?}"
    );
    assert!(outcome(&partitions, 2).is_ok());
    assert!(
        env.arrived(routes::GRAPHQL, 1).is_empty(),
        "a GraphQL query was sent during the pause"
    );
    assert_eq!(env.arrived(routes::GRAPHQL, 2).len(), 1);
    // REST of installation 1 waits too; installation 2's does not.
    let again = env.read(busy).await.expect_err("still paused");
    assert!(again.retry_after.is_some(), "{again:?}");
    assert_eq!(
        env.arrived(routes::REPO_BY_ID, 1).len(),
        1,
        "sent while paused"
    );
    assert!(env.read(calm).await.is_ok());

    // Once the wait is over, installation 1 lists again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while outcome(&env.list().await, 1).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "still held after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let graphql = env.arrived(routes::GRAPHQL, 1);
    assert_eq!(graphql.len(), 1, "{graphql:?}");
    let after = graphql[0].at - limited[0].at;
    assert!(
        after + CLOCK_SLACK >= Duration::from_secs(3),
        "GraphQL reached GitHub {after:?} after the 403"
    );
    assert!(env.read(busy).await.is_ok());
}

#[tokio::test]
async fn a_graphql_rate_limited_error_should_hold_rest_of_that_installation() {
    let env = env(&[(1, "acme")]).await;
    let busy = env.repo(1, "acme", "busy").await;
    env.fake
        .inject(Fault::next(FaultKind::GraphqlRateLimited, 1).on(routes::GRAPHQL));

    let partitions = env.list().await;
    let held = outcome(&partitions, 1).expect_err("rate limited");
    // Budget was left: a secondary limit, GitHub's default minute.
    assert_eq!(held.retry_after, Some(Duration::from_secs(60)));

    let failure = env.read(busy).await.expect_err("REST paused too");
    assert!(failure.message().contains("rate limit"), "{failure}");
    assert!(
        failure
            .retry_after
            .is_some_and(|w| w > Duration::from_secs(55)),
        "{failure:?}"
    );
    assert!(
        env.arrived(routes::REPO_BY_ID, 1).is_empty(),
        "a REST request was sent during the pause"
    );

    // Another installation is not paused.
    env.fake.add_installation(2, "globex");
    env.source
        .refresh_installations()
        .await
        .expect("installations");
    let calm = env.repo(2, "globex", "calm").await;
    assert!(env.read(calm).await.is_ok());
    assert_eq!(env.arrived(routes::REPO_BY_ID, 2).len(), 1);
}

#[tokio::test]
async fn a_spent_rest_budget_should_not_hold_graphql() {
    let env = env(&[(1, "acme")]).await;
    let busy = env.repo(1, "acme", "busy").await;
    env.fake.set_remaining(1, "core", 0);

    let failure = env.read(busy).await.expect_err("primary rate limit");
    assert!(
        failure
            .retry_after
            .is_some_and(|w| w > Duration::from_secs(3000)),
        "{failure:?}"
    );

    // GraphQL has a budget of its own.
    let partitions = env.list().await;
    assert!(outcome(&partitions, 1).is_ok());
    assert_eq!(env.arrived(routes::GRAPHQL, 1).len(), 1);
}
