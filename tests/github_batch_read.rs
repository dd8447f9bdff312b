//! The GitHub storage's batch read (`Storage::get_many`) against the fake
//! GitHub and a real PostgreSQL: one GraphQL query per installation and 100
//! repositories, and the REST read by id for whatever that query cannot
//! decide, so that only a 404 by id removes a repository.

use crate::support;
use crate::support::github_counts::rest_reads;
use crate::support::registry::installed_repo;
use support::fake_github;

use std::sync::Arc;

use fake_github::{routes, FakeGithub, Fault, FaultKind};
use prometheus_client::registry::Registry;
use roster::controller::{Failure, Storage};
use roster::db::testing::fresh_database;
use roster::github::storage::NOT_VISIBLE;
use roster::github::{GithubOptions, GithubSource};
use roster::metrics::Metrics;
use roster::registry::{ensure_known, record_node_ids};
use roster::source::{FileState, InstallationId, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

const FILE: &str = "project.yaml";

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    source: GithubSource,
}

/// A fake GitHub with installation 1 (`acme`), a fresh database, and a
/// source connected to both.
async fn env() -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
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

fn yaml(name: &str) -> String {
    format!("name: {name}\nowner: team-{name}\n")
}

/// Makes the registry know `id` as `owner/name` of `installation`, with
/// the fake's node id when `with_node_id`.
async fn remember(
    env: &Env,
    id: i64,
    installation: i64,
    owner: &str,
    name: &str,
    with_node_id: bool,
) {
    let info = installed_repo(owner, name, installation);
    ensure_known(&env.pool, &[(RepoId(id), info)])
        .await
        .expect("ensure_known");
    if with_node_id {
        record_node_ids(&env.pool, &[(RepoId(id), format!("R_{id}"))])
            .await
            .expect("record_node_ids");
    }
}

async fn node_id(pool: &PgPool, id: i64) -> Option<String> {
    sqlx::query_scalar("select node_id from repositories where id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("the repository")
}

async fn read_many(env: &Env, ids: &[i64]) -> Vec<Result<Observed, Failure>> {
    let items: Vec<(RepoId, Option<&[u8]>)> = ids.iter().map(|&id| (RepoId(id), None)).collect();
    env.source.storage().get_many(&items).await
}

fn present(state: &Result<Observed, Failure>) -> (&RepoInfo, &FileState) {
    match state {
        Ok(Observed::Present { repo, file }) => (repo, file),
        other => panic!("expected a present repository, got {other:?}"),
    }
}

/// Reads one repository so that the installation's token exists, then
/// forgets every count: what follows is counted alone.
async fn warm_up(env: &Env) {
    let id = env.fake.add_repo(1, "warm-up");
    remember(env, id, 1, "acme", "warm-up", true).await;
    let states = read_many(env, &[id]).await;
    assert!(states[0].is_ok(), "{:?}", states[0]);
    env.fake.reset_counts();
}

#[tokio::test]
async fn a_batch_should_be_read_with_one_query_per_hundred_repositories() {
    let env = env().await;
    let mut ids = Vec::new();
    for n in 0..150 {
        let name = format!("svc-{n:03}");
        let id = match n % 3 {
            0 => env.fake.add_repo_with_file(1, &name, FILE, &yaml(&name)),
            1 => env.fake.add_repo(1, &name),
            _ => {
                let id = env.fake.add_repo(1, &name);
                env.fake.archive_repo(id, n == 2);
                id
            }
        };
        // Half known by node id, half only by name.
        remember(&env, id, 1, "acme", &name, n % 2 == 0).await;
        ids.push(id);
    }
    warm_up(&env).await;

    let states = read_many(&env, &ids).await;

    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 2, "100 + 50");
    assert_eq!(env.fake.total(), 2, "nothing else was asked");
    assert_eq!(states.len(), 150);
    for (n, (id, state)) in ids.iter().zip(&states).enumerate() {
        let name = format!("svc-{n:03}");
        if n == 2 {
            assert!(
                matches!(state, Ok(Observed::Removed { repo: Some(_), reason }) if reason == "archived"),
                "{state:?}"
            );
            continue;
        }
        let (repo, file) = present(state);
        assert_eq!(repo.name, name);
        assert_eq!(repo.installation_id, Some(InstallationId(1)));
        let head = env.fake.head(*id).expect("a head");
        match n % 3 {
            0 => assert_eq!(
                file,
                &FileState::Found {
                    sha: head,
                    bytes: yaml(&name).into_bytes()
                }
            ),
            _ => assert_eq!(file, &FileState::Absent { sha: Some(head) }, "{name}"),
        }
    }
    // The ones asked for by name now have their node id.
    assert_eq!(
        node_id(&env.pool, ids[1]).await,
        Some(format!("R_{}", ids[1]))
    );
}

#[tokio::test]
async fn a_single_push_should_cost_one_graphql_request() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "checkout", FILE, &yaml("checkout"));
    remember(&env, id, 1, "acme", "checkout", true).await;
    warm_up(&env).await;
    let sha = env.fake.push_file(id, FILE, yaml("checkout-v2").as_bytes());

    let states = read_many(&env, &[id]).await;

    assert_eq!(env.fake.total(), 1, "one request in all");
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    let (_, file) = present(&states[0]);
    assert_eq!(
        file,
        &FileState::Found {
            sha,
            bytes: yaml("checkout-v2").into_bytes()
        }
    );
}

#[tokio::test]
async fn a_hinted_key_should_cost_nothing_and_the_others_one_query() {
    let env = env().await;
    let id = env.fake.add_repo(1, "plain");
    remember(&env, id, 1, "acme", "plain", true).await;
    warm_up(&env).await;
    let observed = Observed::Present {
        repo: installed_repo("acme", "hinted", 1),
        file: FileState::Absent { sha: None },
    };
    let hint = serde_json::to_vec(&observed).expect("serialise");

    let items = [(RepoId(77), Some(hint.as_slice())), (RepoId(id), None)];
    let states = env.source.storage().get_many(&items).await;

    assert_eq!(states[0].as_ref().ok(), Some(&observed));
    assert_eq!(present(&states[1]).0.name, "plain");
    assert_eq!(env.fake.total(), 1);
}

#[tokio::test]
async fn a_repository_the_batch_cannot_see_should_be_removed_only_after_the_rest_404() {
    let env = env().await;
    let kept = env.fake.add_repo_with_file(1, "kept", FILE, &yaml("kept"));
    let gone = env.fake.add_repo_with_file(1, "gone", FILE, &yaml("gone"));
    remember(&env, kept, 1, "acme", "kept", true).await;
    remember(&env, gone, 1, "acme", "gone", true).await;
    warm_up(&env).await;
    env.fake.delete_repo(gone);

    // While GitHub cannot answer by id, the unseen repository is not removed.
    env.fake
        .inject(Fault::always(FaultKind::ServerError).on(routes::REPO_BY_ID));
    let states = read_many(&env, &[kept, gone]).await;
    assert_eq!(present(&states[0]).0.name, "kept");
    let failure = states[1].as_ref().expect_err("an unsure answer");
    assert!(failure.message().contains("500"), "{failure:?}");
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    assert!(env.fake.count(routes::REPO_BY_ID) >= 1);

    // Once it answers 404 by id, the repository is removed.
    env.fake.clear_faults();
    env.fake.reset_counts();
    let states = read_many(&env, &[kept, gone]).await;
    assert_eq!(present(&states[0]).0.name, "kept");
    assert_eq!(
        states[1].as_ref().ok(),
        Some(&Observed::Removed {
            repo: None,
            reason: NOT_VISIBLE.into()
        })
    );
    assert!(env.fake.count(routes::REPO_BY_ID) >= 1, "asked by id");
}

#[tokio::test]
async fn a_renamed_repository_known_only_by_name_should_be_read_by_id_then_by_node_id() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "before", FILE, &yaml("before"));
    remember(&env, id, 1, "acme", "before", false).await;
    warm_up(&env).await;
    env.fake.rename_repo(id, "after");

    let states = read_many(&env, &[id]).await;

    assert_eq!(present(&states[0]).0.name, "after");
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    assert!(env.fake.count(routes::REPO_BY_ID) >= 1, "asked by id");
    assert_eq!(node_id(&env.pool, id).await, Some(format!("R_{id}")));

    // Now known by node id: whatever its name, one query.
    env.fake.reset_counts();
    let states = read_many(&env, &[id]).await;
    assert_eq!(present(&states[0]).0.name, "after");
    assert_eq!(env.fake.total(), 1);
}

#[tokio::test]
async fn a_name_that_now_means_another_repository_should_not_be_taken_for_it() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "svc", FILE, &yaml("old"));
    remember(&env, id, 1, "acme", "svc", false).await;
    warm_up(&env).await;
    env.fake.rename_repo(id, "svc-old");
    let impostor = env
        .fake
        .add_repo_with_file(1, "svc", FILE, &yaml("impostor"));

    let states = read_many(&env, &[id]).await;

    let (repo, file) = present(&states[0]);
    assert_eq!(repo.name, "svc-old");
    assert!(
        matches!(file, FileState::Found { bytes, .. } if bytes == &yaml("old").into_bytes()),
        "{file:?} (the impostor is {impostor})"
    );
}

#[tokio::test]
async fn repositories_of_two_installations_should_cost_a_query_each() {
    let env = env().await;
    env.fake.add_installation(2, "globex");
    let a = env.fake.add_repo(1, "a");
    let b = env.fake.add_repo(2, "b");
    remember(&env, a, 1, "acme", "a", true).await;
    remember(&env, b, 2, "globex", "b", true).await;
    // Both installations' tokens exist before counting.
    read_many(&env, &[a, b]).await;
    env.fake.reset_counts();

    let states = read_many(&env, &[a, b]).await;

    assert_eq!(present(&states[0]).0.owner, "acme");
    assert_eq!(present(&states[1]).0.owner, "globex");
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 2);
    assert_eq!(env.fake.total(), 2);
}

#[tokio::test]
async fn a_failing_batch_should_fail_each_key_without_asking_one_by_one() {
    let env = env().await;
    let ids: Vec<i64> = (0..5)
        .map(|n| env.fake.add_repo(1, &format!("r{n}")))
        .collect();
    for (n, id) in ids.iter().enumerate() {
        remember(&env, *id, 1, "acme", &format!("r{n}"), true).await;
    }
    warm_up(&env).await;
    env.fake
        .inject(Fault::next(FaultKind::BadGateway, 1).on(routes::GRAPHQL_READ));

    let states = read_many(&env, &ids).await;

    for state in &states {
        let failure = state.as_ref().expect_err("a failure");
        assert!(failure.message().contains("502"), "{failure:?}");
    }
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    assert_eq!(rest_reads(&env.fake), 0, "no read one by one");
}

#[tokio::test]
async fn an_unknown_repository_should_be_read_over_rest() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "stranger", FILE, &yaml("stranger"));
    warm_up(&env).await;

    let states = read_many(&env, &[id]).await;

    assert_eq!(present(&states[0]).0.name, "stranger");
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 0);
    assert!(env.fake.count(routes::REPO_BY_ID) >= 1);
}

#[tokio::test]
async fn a_spent_budget_should_defer_each_key_until_the_reset_and_ask_no_more() {
    let env = env().await;
    let ids: Vec<i64> = (0..3)
        .map(|n| env.fake.add_repo(1, &format!("r{n}")))
        .collect();
    for (n, id) in ids.iter().enumerate() {
        remember(&env, *id, 1, "acme", &format!("r{n}"), true).await;
    }
    warm_up(&env).await;
    env.fake.set_remaining(1, "graphql", 0);

    for round in 0..2 {
        let states = read_many(&env, &ids).await;
        for state in &states {
            let failure = state.as_ref().expect_err("a wait");
            assert!(failure.deferred, "round {round}: {failure:?}");
            assert!(
                failure
                    .message()
                    .starts_with("waiting for GitHub's rate limit, resets at "),
                "{failure:?}"
            );
            assert!(failure.message().ends_with(" UTC"), "{failure:?}");
            let wait = failure.retry_after.expect("until the reset");
            assert!(
                wait > std::time::Duration::from_secs(3000)
                    && wait <= std::time::Duration::from_secs(3600),
                "{wait:?}"
            );
        }
    }
    // The first read learnt the budget was spent; the second did not ask.
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    assert_eq!(rest_reads(&env.fake), 0);
}
