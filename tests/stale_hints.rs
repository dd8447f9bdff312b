//! A listing's answer that was read before a push must not undo that
//! push: the listing hands its snapshot to the worker as a hint, and when
//! the push has been applied in between, the snapshot is older than what
//! the registry holds.

use crate::support;
use support::fake_github;
use support::github_server;

use std::time::Duration;

use fake_github::{routes, FakeGithub, Fault, FaultKind};
use github_server::{github_env, project, project_yaml, push, wait_synced, FILE};
use roster::db::testing::fresh_database;
use support::server::{eventually, Roster};

#[tokio::test]
async fn a_listing_read_before_a_push_should_not_undo_the_push() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "first"));
    let (pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let mut env = github_env(&fake, &url);
    env.push((
        "ROSTER_API_TOKEN",
        support::github_app::API_TOKEN.to_owned(),
    ));
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    let server = Roster::start(&env, logs.path()).await;
    let base = server.base.clone();
    let first = fake.head(id).expect("a head");
    wait_synced(&base, "svc", &first, Duration::from_secs(20)).await;
    // The start-up listing may log its end after its answer is applied.
    eventually("the start-up listing", Duration::from_secs(20), || async {
        server.logs().contains("listing done").then_some(())
    })
    .await;
    let listings_before = server.logs().matches("listing done").count();

    // The next listing reads the repository now, at "first", and its
    // answer arrives three seconds later.
    fake.reset_counts();
    fake.inject(Fault::next(FaultKind::LateAnswer(Duration::from_secs(3)), 1).on_page(1));
    let asked = support::github_app::resync(&base).await;
    assert_eq!(asked.status, 202, "{}", asked.body);
    eventually("the listing's read", Duration::from_secs(10), || async {
        (fake.count(routes::GRAPHQL) > 0).then_some(())
    })
    .await;
    // Meanwhile (the answer is still on its way) a push changes the file,
    // and is applied.
    assert_eq!(
        server.logs().matches("listing done").count(),
        listings_before,
        "the listing is still running"
    );
    let second = fake.push_file(id, FILE, project_yaml("svc", "second").as_bytes());
    assert_eq!(push(&base, id, "svc").await.status, 202);
    wait_synced(&base, "svc", &second, Duration::from_secs(20)).await;

    eventually("the listing to finish", Duration::from_secs(20), || async {
        (server.logs().matches("listing done").count() > listings_before).then_some(())
    })
    .await;
    // Whatever the worker made of the late answer is done once the queue
    // is empty.
    eventually("an empty queue", Duration::from_secs(20), || async {
        let waiting: i64 = sqlx::query_scalar("select count(*) from queue")
            .fetch_one(&pool)
            .await
            .ok()?;
        (waiting == 0).then_some(())
    })
    .await;
    let entry = project(&base, "svc").await.expect("the entry");
    assert_eq!(
        entry["description"], "second",
        "the push was undone: {entry}"
    );
    wait_synced(&base, "svc", &second, Duration::from_secs(1)).await;
    let undone: i64 = sqlx::query_scalar(
        "select count(*) from changes where name = 'svc' and kind = 'changed'
           and after->>'description' = 'first'",
    )
    .fetch_one(&pool)
    .await
    .expect("changes");
    assert_eq!(undone, 0, "the change log records the push undone");
}
