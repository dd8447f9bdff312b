//! A listing asked for while one runs, or after one ran: asked again only
//! when that listing cannot have seen what the request is about (an
//! installation it did not find)
//! (docs/architecture.md#listings-asked-for).

use crate::support;
use support::fake_github;
use support::github_app;

use std::time::Duration;

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{deliver, installation_created, server_env, Repo};
use roster::controller::ListingSchedule;
use roster::db::queue::{partitions_found, PgQueue, Seen};
use serde_json::{json, Value};
use support::registry::queue_with;
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);
const ACME: i64 = 1;
const GLOBEX: i64 = 2;

async fn requested(pool: &sqlx::PgPool) -> bool {
    sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("the schedule")
}

#[tokio::test]
async fn an_installation_a_listing_already_found_should_not_be_listed_again() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let id = fake.add_repo_with_file(
        ACME,
        "checkout",
        "project.yaml",
        "name: checkout\nowner: x\n",
    );
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let roster = Roster::start(
        &server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url),
        dir.path(),
    )
    .await;
    // The start-up listing, done.
    eventually("the start-up listing done", LIMIT, || async {
        let finished: Option<chrono::DateTime<chrono::Utc>> =
            sqlx::query_scalar("select last_finished_at from listing_schedule")
                .fetch_one(&pool)
                .await
                .ok()?;
        finished.map(|_| ())
    })
    .await;
    let listings = fake.count(routes::INSTALLATIONS);
    let repo = Repo::new(id, ACME, "acme", "checkout");

    // The delivery of an installation created before that listing started
    // (late, or redelivered): that listing found it and read all of it.
    let mut old: Value = serde_json::from_slice(&installation_created(
        ACME,
        "acme",
        std::slice::from_ref(&repo),
    ))
    .unwrap_or_default();
    old["installation"]["created_at"] = json!(chrono::Utc::now().timestamp() - 3_600);
    let answer = deliver(&roster.base, "installation", old.to_string().into_bytes()).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert!(!requested(&pool).await, "no listing asked for");

    // Created now, and found by that listing: it was listed whole.
    let again = installation_created(ACME, "acme", std::slice::from_ref(&repo));
    let answer = deliver(&roster.base, "installation", again).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert!(!requested(&pool).await, "no listing asked for");

    // Another installation, created now: no listing has found it yet.
    fake.add_installation(GLOBEX, "globex");
    let other = fake.add_repo(GLOBEX, "billing");
    let new = installation_created(
        GLOBEX,
        "globex",
        &[Repo::new(other, GLOBEX, "globex", "billing")],
    );
    let answer = deliver(&roster.base, "installation", new).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    eventually("a second listing", LIMIT, || async {
        (fake.count(routes::INSTALLATIONS) > listings && !requested(&pool).await).then_some(())
    })
    .await;
    assert_eq!(
        fake.count(routes::INSTALLATIONS),
        listings + 1,
        "one more listing"
    );
}

/// The partition an installation's repositories are listed in.
fn partition_of(id: i64) -> String {
    roster::source::Partition::Installation(roster::source::InstallationId(id)).to_string()
}

/// Asks for a listing as an `installation` `created` delivery for `id`,
/// created now, does.
async fn deliver_created(queue: &PgQueue, pool: &sqlx::PgPool, id: i64) {
    let seen = [Seen {
        partition: partition_of(id),
        created_at: Some(chrono::Utc::now().timestamp()),
    }];
    let mut conn = pool.acquire().await.expect("a connection");
    queue
        .request_listing_unless_seen_in(&mut conn, &seen)
        .await
        .expect("the request");
}

#[tokio::test]
async fn an_installation_delivered_before_the_running_listing_found_its_installations_should_wait_for_it(
) {
    // The interleaving a loaded machine produces: the start-up listing has
    // begun (taken) when the App is installed, and the delivery is taken
    // in before that listing has asked GitHub for the installations.
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let queue = queue_with(&pool, Duration::from_secs(30));
    assert!(queue.take_listing(Duration::ZERO).await.expect("taken"));
    deliver_created(&queue, &pool, ACME).await;
    assert!(
        !requested(&pool).await,
        "the running listing asks GitHub after the delivery: it finds the installation"
    );
    // It finds it: no other listing.
    partitions_found(&pool, &[partition_of(ACME)])
        .await
        .expect("recorded");
    assert!(!requested(&pool).await, "one trigger, one listing");

    // A listing that finds other installations only: asked again.
    assert!(queue.take_listing(Duration::ZERO).await.expect("taken"));
    deliver_created(&queue, &pool, GLOBEX).await;
    assert!(!requested(&pool).await);
    partitions_found(&pool, &[partition_of(ACME)])
        .await
        .expect("recorded");
    assert!(requested(&pool).await, "globex was not found: listed again");

    // A listing that fails before it finds anything: asked again.
    assert!(queue.take_listing(Duration::ZERO).await.expect("taken"));
    deliver_created(&queue, &pool, 3).await;
    assert!(!requested(&pool).await);
    partitions_found(&pool, &[]).await.expect("recorded");
    assert!(requested(&pool).await, "nothing found: listed again");

    // Once the listing has found its installations, a delivery about
    // another asks at once.
    assert!(queue.take_listing(Duration::ZERO).await.expect("taken"));
    partitions_found(&pool, &[partition_of(ACME)])
        .await
        .expect("recorded");
    deliver_created(&queue, &pool, 4).await;
    assert!(requested(&pool).await, "that listing cannot find it");
}
