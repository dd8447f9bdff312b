//! The GitHub source against the fake GitHub and a real PostgreSQL: the
//! org-wide listing, reading repositories by id, and every way GitHub
//! answers badly.

use crate::support;
use crate::support::registry::installed_repo;
use support::fake_github;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, Fault, FaultKind};
use prometheus_client::registry::Registry;
use roster::controller::{Failure, Listed, Lister, Storage};

/// What a listing found in one installation.
type Partition = Listed<RepoId, roster::source::Partition>;
use roster::db::testing::fresh_database;
use roster::github::storage::NOT_VISIBLE;
use roster::github::{GithubOptions, GithubSource};
use roster::metrics::Metrics;
use roster::registry::ensure_known;
use roster::source::{FileState, InstallationId, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

const FILE: &str = "project.yaml";

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    registry: Registry,
    source: GithubSource,
}

/// A fake GitHub with installation 1 (`acme`), a fresh database, and a
/// source connected to both.
async fn env() -> Env {
    env_with(GithubOptions::default(), |fake| fake.settings()).await
}

async fn env_with(
    options: GithubOptions,
    settings: impl FnOnce(&FakeGithub) -> roster::config::GithubAppSettings,
) -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let source = GithubSource::connect_with(&settings(&fake), FILE, pool.clone(), metrics, options)
        .await
        .expect("connect");
    Env {
        fake,
        pool,
        registry,
        source,
    }
}

fn yaml(name: &str) -> String {
    format!("name: {name}\nowner: team-{name}\n")
}

fn present(observed: &Observed) -> (&RepoInfo, &FileState) {
    match observed {
        Observed::Present { repo, file } => (repo, file),
        other => panic!("expected a present repository, got {other:?}"),
    }
}

async fn read(env: &Env, id: i64) -> Result<Observed, Failure> {
    env.source.storage().get(&RepoId(id), None).await
}

async fn remember(pool: &PgPool, id: i64, installation: i64, name: &str) {
    let info = installed_repo("acme", name, installation);
    ensure_known(pool, &[(RepoId(id), info)])
        .await
        .expect("ensure_known");
}

fn partition<'a>(partitions: &'a [Partition], name: &str) -> &'a Partition {
    partitions
        .iter()
        .find(|p| p.partition.to_string() == name)
        .unwrap_or_else(|| panic!("no partition {name}"))
}

fn hint_of(partition: &Partition, id: i64) -> Observed {
    let item = partition
        .items
        .iter()
        .find(|i| i.key == RepoId(id))
        .expect("listed");
    let hint: serde_json::Value =
        serde_json::from_slice(item.hint.as_deref().expect("hinted")).expect("hint decodes");
    assert!(
        hint["read_at"].is_string(),
        "a hint says when it was read: {hint}"
    );
    serde_json::from_value(hint["observed"].clone()).expect("the observation decodes")
}

// ---- listing ----

#[tokio::test]
async fn listing_should_walk_every_page_of_every_installation_with_hints() {
    let env = env().await;
    env.fake.add_installation(2, "globex");
    let mut with_file = Vec::new();
    let mut archived = Vec::new();
    let mut without_file = Vec::new();
    for installation in [1, 2] {
        for n in 0..250 {
            let name = format!("repo-{n}");
            match n % 5 {
                0 => with_file.push((
                    env.fake
                        .add_repo_with_file(installation, &name, FILE, &yaml(&name)),
                    name,
                )),
                1 => {
                    let id = env.fake.add_repo(installation, &name);
                    env.fake.archive_repo(id, true);
                    archived.push(id);
                }
                _ => without_file.push(env.fake.add_repo(installation, &name)),
            }
        }
    }
    env.fake.reset_counts();

    let partitions = env.source.lister().list().await.expect("listing");

    assert_eq!(partitions.len(), 2);
    for name in ["installation/1", "installation/2"] {
        let p = partition(&partitions, name);
        assert!(p.outcome.is_ok(), "{name}: {:?}", p.outcome);
        assert_eq!(p.items.len(), 250, "{name}");
        assert!(p.items.iter().all(|i| i.hint.is_some()));
    }
    // 3 pages of 100 per installation, one installation listing, two
    // tokens, and each organisation's (empty) teams and members.
    assert_eq!(env.fake.count(routes::GRAPHQL), 6);
    assert_eq!(env.fake.count(routes::INSTALLATIONS), 1);
    assert_eq!(env.fake.token_creations(), 2);
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 4);
    assert_eq!(env.fake.total(), 13);

    let one = partition(&partitions, "installation/1");
    let two = partition(&partitions, "installation/2");
    let in_partition = |id: i64| {
        if one.items.iter().any(|i| i.key == RepoId(id)) {
            one
        } else {
            two
        }
    };
    for (id, name) in &with_file {
        let observed = hint_of(in_partition(*id), *id);
        let (repo, file) = present(&observed);
        assert_eq!(&repo.name, name);
        assert_eq!(repo.default_branch, "main");
        let head = env.fake.head(*id).expect("head");
        assert_eq!(
            file,
            &FileState::Found {
                sha: head,
                bytes: yaml(name).into_bytes()
            }
        );
    }
    for id in &archived {
        let observed = hint_of(in_partition(*id), *id);
        assert!(
            matches!(observed, Observed::Removed { repo: Some(_), ref reason } if reason == "archived")
        );
    }
    for id in &without_file {
        let observed = hint_of(in_partition(*id), *id);
        let head = env.fake.head(*id);
        assert_eq!(present(&observed).1, &FileState::Absent { sha: head });
    }
}

#[tokio::test]
async fn a_failing_page_should_leave_only_its_partition_incomplete() {
    let env = env().await;
    env.fake.add_installation(2, "globex");
    for n in 0..250 {
        env.fake.add_repo(1, &format!("big-{n}"));
    }
    for n in 0..50 {
        env.fake.add_repo(2, &format!("small-{n}"));
    }
    env.fake
        .inject(Fault::always(FaultKind::BadGateway).on_page(2));

    let partitions = env.source.lister().list().await.expect("listing");

    let big = partition(&partitions, "installation/1");
    let failure = big.outcome.as_ref().expect_err("page 2 failed");
    assert!(failure.message().contains("502"), "{failure}");
    // What page 1 found is still enqueued; only the sweep is off.
    assert_eq!(big.items.len(), 100);
    let small = partition(&partitions, "installation/2");
    assert!(small.outcome.is_ok());
    assert_eq!(small.items.len(), 50);
}

#[tokio::test]
async fn a_page_that_fails_once_should_be_retried_and_complete() {
    let env = env().await;
    for n in 0..150 {
        env.fake.add_repo(1, &format!("repo-{n}"));
    }
    env.fake
        .inject(Fault::next(FaultKind::BadGateway, 1).on_page(2));

    let partitions = env.source.lister().list().await.expect("listing");

    let p = partition(&partitions, "installation/1");
    assert!(p.outcome.is_ok(), "{:?}", p.outcome);
    assert_eq!(p.items.len(), 150);
}

#[tokio::test]
async fn a_graphql_rate_limit_should_fail_the_partition_with_a_wait() {
    let env = env().await;
    env.fake.add_repo(1, "repo");
    env.fake
        .inject(Fault::always(FaultKind::GraphqlRateLimited).on(routes::GRAPHQL));

    let partitions = env.source.lister().list().await.expect("listing");

    let failure = partition(&partitions, "installation/1")
        .outcome
        .clone()
        .expect_err("rate limited");
    assert!(failure.message().contains("rate limit"), "{failure}");
    assert!(failure.retry_after.is_some());
    // Not hammered: one query, no retry.
    assert_eq!(env.fake.count(routes::GRAPHQL), 1);
}

#[tokio::test]
async fn a_suspended_installation_should_list_its_known_repositories_and_sweep_nothing() {
    let env = env().await;
    let id = env.fake.add_repo(1, "kept");
    remember(&env.pool, id, 1, "kept").await;
    env.fake.suspend_installation(1, true);

    let partitions = env.source.lister().list().await.expect("listing");

    let p = partition(&partitions, "installation/1");
    assert_eq!(
        p.outcome.as_ref().expect_err("suspended").message(),
        "installation suspended"
    );
    assert_eq!(
        p.items.iter().map(|i| i.key).collect::<Vec<_>>(),
        vec![RepoId(id)]
    );
    assert!(p.items.iter().all(|i| i.hint.is_none()));
}

#[tokio::test]
async fn an_uninstalled_installation_the_registry_remembers_should_be_an_empty_complete_partition()
{
    let env = env().await;
    remember(&env.pool, 555, 9, "gone").await;

    let partitions = env.source.lister().list().await.expect("listing");

    let p = partition(&partitions, "installation/9");
    assert!(p.outcome.is_ok());
    assert!(p.items.is_empty());
}

#[tokio::test]
async fn a_failed_installation_listing_should_fail_the_whole_listing() {
    let env = env().await;
    env.fake
        .inject(Fault::always(FaultKind::ServerError).on(routes::INSTALLATIONS));

    let failure = env
        .source
        .lister()
        .list()
        .await
        .expect_err("no installations, no listing");

    assert!(failure.message().contains("500"), "{failure}");
}

#[tokio::test]
async fn installations_should_be_read_across_pages() {
    let env = env().await;
    for id in 2..=130 {
        env.fake.add_installation(id, &format!("org-{id}"));
    }
    env.fake.reset_counts();

    let found = env
        .source
        .refresh_installations()
        .await
        .expect("installations");

    assert_eq!(found.len(), 130);
    assert_eq!(env.fake.count(routes::INSTALLATIONS), 2);
}

// ---- storage ----

#[tokio::test]
async fn a_hint_should_be_the_answer_without_asking_github() {
    let env = env().await;
    let observed = Observed::Present {
        repo: installed_repo("acme", "hinted", 1),
        file: FileState::Absent { sha: None },
    };
    let hint = serde_json::to_vec(&observed).expect("serialise");
    env.fake.reset_counts();

    let got = env
        .source
        .storage()
        .get(&RepoId(77), Some(&hint))
        .await
        .expect("hint");

    assert_eq!(got, observed);
    assert_eq!(env.fake.total(), 0);
}

#[tokio::test]
async fn a_repository_with_a_file_should_be_found_at_its_head() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "checkout", FILE, &yaml("checkout-api"));
    remember(&env.pool, id, 1, "checkout").await;

    let observed = read(&env, id).await.expect("read");

    let (repo, file) = present(&observed);
    assert_eq!(
        (repo.owner.as_str(), repo.name.as_str()),
        ("acme", "checkout")
    );
    assert_eq!(repo.installation_id, Some(InstallationId(1)));
    assert_eq!(
        repo.html_url.as_deref(),
        Some("https://github.com/acme/checkout")
    );
    let head = env.fake.head(id).expect("head");
    assert_eq!(
        file,
        &FileState::Found {
            sha: head,
            bytes: yaml("checkout-api").into_bytes()
        }
    );
}

#[tokio::test]
async fn a_long_file_should_survive_githubs_line_wrapped_base64() {
    let env = env().await;
    let text: String = (0..200)
        .map(|n| format!("# line {n} with some text to wrap\n"))
        .collect();
    let id = env.fake.add_repo_with_file(1, "long", FILE, &text);

    let observed = read(&env, id).await.expect("read");

    let FileState::Found { bytes, .. } = present(&observed).1 else {
        panic!("not found")
    };
    assert_eq!(bytes, text.as_bytes());
}

#[tokio::test]
async fn a_file_in_a_sub_folder_and_a_branch_with_a_slash_should_be_read() {
    let fake_file = "config/project.yaml";
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, _) = fresh_database().await.expect("fresh database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let source = GithubSource::connect(&fake.settings(), fake_file, pool, metrics)
        .await
        .expect("connect");
    let id = fake.add_repo_with_file(1, "nested", fake_file, "name: nested\n");
    fake.set_default_branch(id, "release/v1");

    let observed = source.storage().get(&RepoId(id), None).await.expect("read");

    let (repo, file) = present(&observed);
    assert_eq!(repo.default_branch, "release/v1");
    assert!(matches!(file, FileState::Found { bytes, .. } if bytes == b"name: nested\n"));
}

#[tokio::test]
async fn a_repository_without_the_file_should_be_absent() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "no-file", FILE, "name: x\n");
    env.fake.delete_file(id, FILE);

    let observed = read(&env, id).await.expect("read");

    let head = env.fake.head(id);
    assert_eq!(present(&observed).1, &FileState::Absent { sha: head });
}

#[tokio::test]
async fn a_file_over_256_kib_should_be_unreadable() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "huge", FILE, &"x".repeat(300 * 1024));

    let observed = read(&env, id).await.expect("read");

    let FileState::Unreadable { message, .. } = present(&observed).1 else {
        panic!("not unreadable")
    };
    assert!(message.contains("256 KiB"), "{message}");
}

#[tokio::test]
async fn a_deleted_repository_should_be_removed() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(1, "doomed", FILE, "name: doomed\n");
    remember(&env.pool, id, 1, "doomed").await;
    env.fake.delete_repo(id);

    let observed = read(&env, id).await.expect("read");

    assert_eq!(
        observed,
        Observed::Removed {
            repo: None,
            reason: NOT_VISIBLE.into()
        }
    );
}

#[tokio::test]
async fn an_archived_repository_should_be_removed_with_what_github_shows() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "old", FILE, "name: old\n");
    env.fake.archive_repo(id, true);

    let observed = read(&env, id).await.expect("read");

    let Observed::Removed {
        repo: Some(repo),
        reason,
    } = observed
    else {
        panic!("not removed")
    };
    assert_eq!(reason, "archived");
    assert_eq!(repo.name, "old");
}

#[tokio::test]
async fn a_renamed_repository_should_keep_its_id_and_show_its_new_name() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "before", FILE, "name: x\n");
    remember(&env.pool, id, 1, "before").await;
    env.fake.rename_repo(id, "after");

    let observed = read(&env, id).await.expect("read");

    assert_eq!(present(&observed).0.name, "after");
    assert!(matches!(present(&observed).1, FileState::Found { .. }));
}

#[tokio::test]
async fn a_repository_transferred_to_another_installation_should_be_found_there() {
    let env = env().await;
    env.fake.add_installation(2, "globex");
    let id = env.fake.add_repo_with_file(1, "moving", FILE, "name: x\n");
    remember(&env.pool, id, 1, "moving").await;
    env.fake.transfer_repo(id, 2);

    let observed = read(&env, id).await.expect("read");

    let (repo, _) = present(&observed);
    assert_eq!(
        (repo.owner.as_str(), repo.installation_id),
        ("globex", Some(InstallationId(2)))
    );
}

#[tokio::test]
async fn an_uninstalled_app_should_remove_the_repository() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "orphan", FILE, "name: x\n");
    remember(&env.pool, id, 1, "orphan").await;
    // A token exists already; uninstalling revokes it.
    read(&env, id).await.expect("read");
    env.fake.delete_installation(1);

    let observed = read(&env, id).await.expect("read");

    assert_eq!(
        observed,
        Observed::Removed {
            repo: None,
            reason: NOT_VISIBLE.into()
        }
    );
}

#[tokio::test]
async fn a_suspended_installation_should_fail_without_removing() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "paused", FILE, "name: x\n");
    remember(&env.pool, id, 1, "paused").await;
    // A token exists already: GitHub refuses it once suspended.
    read(&env, id).await.expect("read");
    env.fake.suspend_installation(1, true);

    let failure = read(&env, id).await.expect_err("suspended");

    assert_eq!(failure.message(), "installation suspended");
    assert!(failure.retry_after.is_some());
}

#[tokio::test]
async fn a_suspended_installation_should_fail_before_any_token_exists() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "paused", FILE, "name: x\n");
    remember(&env.pool, id, 1, "paused").await;
    env.fake.suspend_installation(1, true);

    let failure = read(&env, id).await.expect_err("suspended");

    assert_eq!(failure.message(), "installation suspended");
}

#[tokio::test]
async fn a_server_error_should_be_a_failure() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "flaky", FILE, "name: x\n");
    env.fake
        .inject(Fault::next(FaultKind::ServerError, 1).on(routes::REPO_BY_ID));

    let failure = read(&env, id).await.expect_err("500");

    assert!(failure.message().contains("500"), "{failure}");
    assert_eq!(failure.retry_after, None);
    // The next attempt succeeds.
    assert!(read(&env, id).await.is_ok());
}

#[tokio::test]
async fn a_secondary_rate_limit_should_fail_with_its_wait_and_not_hammer() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "busy", FILE, "name: x\n");
    env.fake.inject(
        Fault::next(FaultKind::SecondaryRateLimit { retry_after: 30 }, 1).on(routes::REPO_BY_ID),
    );

    let failure = read(&env, id).await.expect_err("rate limited");

    assert_eq!(failure.retry_after, Some(Duration::from_secs(30)));
    assert!(
        failure.message().contains("secondary rate limit"),
        "{failure}"
    );
    let before = env.fake.count(routes::REPO_BY_ID);
    let again = read(&env, id).await.expect_err("still waiting");
    assert!(again
        .retry_after
        .is_some_and(|w| w > Duration::from_secs(25)));
    assert_eq!(
        env.fake.count(routes::REPO_BY_ID),
        before,
        "sent a request while told to wait"
    );
}

#[tokio::test]
async fn a_429_should_fail_with_its_wait() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "busy", FILE, "name: x\n");
    env.fake
        .inject(Fault::next(FaultKind::TooManyRequests { retry_after: 7 }, 1).on(routes::CONTENTS));

    let failure = read(&env, id).await.expect_err("429");

    assert_eq!(failure.retry_after, Some(Duration::from_secs(7)));
}

#[tokio::test]
async fn a_spent_budget_should_wait_for_the_reset() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "thrifty", FILE, "name: x\n");
    env.fake.set_remaining(1, "core", 0);

    let failure = read(&env, id).await.expect_err("primary rate limit");

    let wait = failure.retry_after.expect("a wait");
    assert!(
        wait > Duration::from_secs(3000) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );
}

#[tokio::test]
async fn garbage_from_github_should_be_a_failure() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "garbled", FILE, "name: x\n");
    env.fake
        .inject(Fault::next(FaultKind::Garbage, 1).on(routes::REPO_BY_ID));

    let failure = read(&env, id).await.expect_err("garbage");

    assert!(failure.message().contains("unexpected answer"), "{failure}");
}

#[tokio::test]
async fn a_slow_answer_should_fail_within_the_timeout() {
    let options = GithubOptions {
        request_timeout: Duration::from_millis(300),
        ..GithubOptions::default()
    };
    let env = env_with(options, |fake| fake.settings()).await;
    let id = env.fake.add_repo_with_file(1, "slow", FILE, "name: x\n");
    env.fake
        .inject(Fault::next(FaultKind::Slow(Duration::from_secs(5)), 1).on(routes::REPO_BY_ID));

    let started = Instant::now();
    let failure = read(&env, id).await.expect_err("timed out");

    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(failure.message().contains("did not answer"), "{failure}");
}

#[tokio::test]
async fn a_dropped_connection_should_be_a_failure() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "dropped", FILE, "name: x\n");
    env.fake
        .inject(Fault::next(FaultKind::Close, 1).on(routes::REPO_BY_ID));

    let failure = read(&env, id).await.expect_err("dropped");

    assert!(
        failure.message().contains("could not reach GitHub"),
        "{failure}"
    );
}

#[tokio::test]
async fn a_repeated_read_should_be_answered_not_modified() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "steady", FILE, "name: x\n");
    let first = read(&env, id).await.expect("read");

    let second = read(&env, id).await.expect("read");

    assert_eq!(first, second);
    // Repository, head commit and file: all three answered 304.
    assert_eq!(env.fake.not_modified(), 3);

    // A push changes the head: the new commit and file are read in full.
    let sha = env.fake.push_file(id, FILE, b"name: y\n");
    let third = read(&env, id).await.expect("read");
    assert_eq!(
        present(&third).1,
        &FileState::Found {
            sha,
            bytes: b"name: y\n".to_vec()
        }
    );
}

#[tokio::test]
async fn installation_tokens_should_be_reused() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "again", FILE, "name: x\n");

    for _ in 0..3 {
        read(&env, id).await.expect("read");
    }
    env.source.lister().list().await.expect("listing");

    assert_eq!(env.fake.token_creations(), 1);
}

#[tokio::test]
async fn a_token_near_its_expiry_should_be_renewed() {
    let env = env().await;
    // Shorter than the renewal margin: every use needs a new one.
    env.fake.set_token_lifetime(Duration::from_secs(60));
    let id = env.fake.add_repo_with_file(1, "short", FILE, "name: x\n");

    read(&env, id).await.expect("read");
    read(&env, id).await.expect("read");

    // Two reads of three requests each, each with a token of its own.
    assert_eq!(env.fake.token_creations(), 6);
}

#[tokio::test]
async fn concurrent_reads_should_share_one_new_token() {
    let env = env().await;
    let ids: Vec<i64> = (0..8)
        .map(|n| {
            env.fake
                .add_repo_with_file(1, &format!("r{n}"), FILE, "name: x\n")
        })
        .collect();
    let storage = env.source.storage();

    let reads = ids.iter().map(|id| {
        let storage = storage.clone();
        let id = *id;
        async move { storage.get(&RepoId(id), None).await }
    });
    let results = futures_util::future::join_all(reads).await;

    assert!(results.iter().all(Result::is_ok));
    assert_eq!(env.fake.token_creations(), 1);
}

#[tokio::test]
async fn a_jwt_for_another_app_should_be_refused_at_connect() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let wrong = roster::config::GithubAppSettings {
        app_id: 1,
        ..fake.settings()
    };
    let refused = GithubSource::connect(&wrong, FILE, pool, metrics).await;
    match refused {
        Err(e) => {
            assert_eq!(e.setting(), "GITHUB_APP_ID");
            assert!(e.message().contains("401"), "{e}");
        }
        Ok(_) => panic!("a wrong App id was accepted"),
    }
}

#[test]
fn the_fake_should_check_the_jwt_signature_and_issuer() {
    use octocrab::jsonwebtoken::DecodingKey;
    let key =
        octocrab::EncodingKey::from_rsa_pem(fake_github::PRIVATE_KEY.as_bytes()).expect("key");
    let public = DecodingKey::from_rsa_pem(include_bytes!("fixtures/test-app-key.pub.pem"))
        .expect("public key");
    let jwt = octocrab::auth::create_jwt(fake_github::APP_ID.into(), &key).expect("jwt");

    assert_eq!(
        fake_github::jwt::verify(&jwt, &public, fake_github::APP_ID),
        Ok(())
    );
    assert!(fake_github::jwt::verify(&jwt, &public, 7).is_err());
    let mut tampered = jwt.clone();
    let last = tampered.pop().expect("non-empty");
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert!(fake_github::jwt::verify(&tampered, &public, fake_github::APP_ID).is_err());
}

#[tokio::test]
async fn the_enterprise_layout_should_work_end_to_end() {
    let env = env_with(GithubOptions::default(), |fake| fake.enterprise_settings()).await;
    let id = env.fake.add_repo_with_file(1, "ghes", FILE, "name: ghes\n");

    let partitions = env.source.lister().list().await.expect("listing");
    let observed = read(&env, id).await.expect("read");

    assert!(partition(&partitions, "installation/1").outcome.is_ok());
    assert_eq!(
        hint_of(partition(&partitions, "installation/1"), id),
        observed
    );
}

#[tokio::test]
async fn requests_should_be_counted_by_status_and_the_budget_reported() {
    let env = env().await;
    let id = env.fake.add_repo_with_file(1, "counted", FILE, "name: x\n");
    read(&env, id).await.expect("read");

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &env.registry).expect("encode");

    assert!(
        text.contains(r#"roster_github_requests_total{status="200"} 4"#),
        "{text}"
    );
    assert!(
        text.contains(r#"roster_github_rate_limit_remaining{installation="1"} 4997"#),
        "{text}"
    );
}
