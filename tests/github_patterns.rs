//! Several project files per repository on GitHub, through the real
//! `roster serve` against the fake GitHub: the listing finds files in
//! folders in its GraphQL pages (no read per repository), a page GitHub
//! refuses for its size is asked again with fewer repositories, and bad
//! files (a link, a folder, too many) leave the registered entries alone.

use crate::support;
use crate::support::registry::installed_repo;
use support::fake_github;

use fake_github::{routes, FakeGithub};
use support::github_app::resync;
use support::monorepo_server::{names, yaml, Env};

const PATTERNS: &str = "project.yaml,services/*/project.yaml";
const ACME: i64 = 1;

/// A repository `name` whose head holds `services/s{k}/project.yaml`
/// declaring `{name}-s{k}` for each k below `services`, and other files
/// beside them.
fn monorepo(fake: &FakeGithub, name: &str, services: usize) -> i64 {
    let id = fake.add_repo(ACME, name);
    let name = name.to_owned();
    fake.change_files(id, move |files| {
        for k in 0..services {
            files.insert(
                format!("services/s{k}/project.yaml"),
                yaml(&format!("{name}-s{k}")),
            );
            files.insert(format!("services/s{k}/main.go"), b"package main".to_vec());
        }
        files.insert("README.md".into(), b"# readme".to_vec());
    });
    id
}

async fn start(fake: FakeGithub) -> Env {
    Env::start(fake, PATTERNS).await
}

#[tokio::test]
async fn a_listing_should_find_the_service_files_of_each_repository_in_its_pages() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    for services in 1..=5 {
        monorepo(&fake, &format!("mono{services}"), services);
    }
    let root = fake.add_repo_with_file(ACME, "root", "project.yaml", "name: root\nowner: x\n");
    fake.push_file(root, "services/api/project.yaml", &yaml("root-api"));
    fake.add_repo_with_file(ACME, "none", "docs/project.yaml", "name: nope\nowner: x\n");
    // A file where the pattern has a folder: nothing matches under it.
    fake.add_repo_with_file(ACME, "flat", "services", "name: flat\nowner: x\n");
    let env = start(fake).await;

    for services in 1..=5 {
        let name = format!("mono{services}");
        let synced = env
            .repo_until(&name, "synced", |r| r["status"] == "synced")
            .await;
        let expected: Vec<String> = (0..services).map(|k| format!("{name}-s{k}")).collect();
        assert_eq!(names(&synced), expected, "{synced}");
    }
    let root = env
        .repo_until("root", "synced", |r| r["status"] == "synced")
        .await;
    assert_eq!(names(&root), ["root", "root-api"], "{root}");
    for name in ["none", "flat"] {
        env.repo_until(name, "no file", |r| r["status"] == "no_file")
            .await;
    }
    assert_eq!(
        env.project("mono3-s2").await["path"],
        "services/s2/project.yaml"
    );
    assert_eq!(env.project("root").await["path"], "project.yaml");
    assert_eq!(
        env.project("root-api").await["path"],
        "services/api/project.yaml"
    );
    // One listing page found every file: no repository was read on its own.
    assert_eq!(env.fake.count(routes::GRAPHQL), 1);
    assert_eq!(env.rest_reads(), 0);
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_link_a_folder_or_too_many_files_should_be_invalid_and_keep_the_entries() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let linked = monorepo(&fake, "linked", 2);
    let folder = monorepo(&fake, "folder", 2);
    let many = monorepo(&fake, "many", 2);
    let env = start(fake).await;
    for name in ["linked", "folder", "many"] {
        env.repo_until(name, "synced", |r| r["status"] == "synced")
            .await;
    }

    env.fake
        .push_symlink(linked, "services/s1/project.yaml", "../../secret.yaml");
    env.fake.change_files(folder, |files| {
        files.remove("services/s1/project.yaml");
        files.insert("services/s1/project.yaml/inner".into(), b"x".to_vec());
    });
    env.fake.change_files(many, |files| {
        for n in 0..600 {
            files.insert(
                format!("services/x{n}/project.yaml"),
                yaml(&format!("x{n}")),
            );
        }
    });
    assert!(resync(&env.roster.url("")).await.status.is_success());

    for (name, error) in [
        (
            "linked",
            "services/s1/project.yaml: file: the file is a symbolic link",
        ),
        (
            "folder",
            "services/s1/project.yaml: file: the path is a folder, not a file",
        ),
        ("many", "file: more than 500 project files"),
    ] {
        let invalid = env
            .repo_until(name, "invalid", |r| r["status"] == "invalid")
            .await;
        let message = invalid["error"].as_str().unwrap_or_default();
        assert!(message.starts_with(error), "{name}: {invalid}");
        assert_eq!(
            names(&invalid),
            [format!("{name}-s0"), format!("{name}-s1")],
            "{name}: entries kept"
        );
    }
    assert_eq!(
        env.project("linked-s1").await["path"],
        "services/s1/project.yaml"
    );
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_listing_page_github_refuses_should_be_asked_again_with_fewer_repositories() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    for n in 0..40 {
        monorepo(&fake, &format!("r{n:02}"), 1);
    }
    // A folder with thousands of entries: with it, a page of 40
    // repositories is too much for GitHub; a smaller one passes.
    let big = monorepo(&fake, "big", 1);
    fake.change_files(big, |files| {
        for n in 0..2_000 {
            files.insert(format!("services/s0/gen{n}.go"), b"package gen".to_vec());
        }
    });
    fake.refuse_entries_over(Some(2_100));
    let env = start(fake).await;

    for n in 0..40 {
        env.repo_until(&format!("r{n:02}"), "synced", |r| r["status"] == "synced")
            .await;
    }
    let big = env
        .repo_until("big", "synced", |r| r["status"] == "synced")
        .await;
    assert_eq!(names(&big), ["big-s0"]);
    // Refused pages were asked again, smaller, and the listing went on
    // without reading any repository on its own.
    assert!(env.fake.count(routes::GRAPHQL) > 1);
    assert!(env.fake.count(routes::GRAPHQL) < 20);
    assert_eq!(env.rest_reads(), 0);
    assert!(env.roster.terminate().success());
}

/// The source alone (no server) on a fresh database, reading `PATTERNS`.
async fn source(fake: &FakeGithub) -> (roster::github::GithubSource, sqlx::PgPool) {
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("fresh database");
    let metrics = std::sync::Arc::new(roster::metrics::Metrics::new(
        &mut prometheus_client::registry::Registry::default(),
    ));
    let source = roster::github::GithubSource::connect_with(
        &fake.settings(),
        PATTERNS,
        pool.clone(),
        metrics,
        roster::github::GithubOptions::default(),
    )
    .await
    .expect("connect");
    (source, pool)
}

async fn remember(pool: &sqlx::PgPool, id: i64, name: &str) {
    use roster::source::RepoId;
    let info = installed_repo("acme", name, ACME);
    roster::registry::ensure_known(pool, &[(RepoId(id), info)])
        .await
        .expect("ensure_known");
    roster::registry::record_node_ids(pool, &[(RepoId(id), format!("R_{id}"))])
        .await
        .expect("record_node_ids");
}

fn paths(state: &Result<roster::source::Observed, roster::controller::Failure>) -> Vec<String> {
    use roster::source::{FileState, Observed};
    match state {
        Ok(Observed::Present {
            file: FileState::Files { files, .. },
            ..
        }) => files.iter().map(|f| f.path.clone()).collect(),
        other => panic!("expected files, got {other:?}"),
    }
}

#[tokio::test]
async fn a_batch_read_and_a_read_by_id_should_find_the_files_at_the_head() {
    use roster::controller::Storage;
    use roster::source::RepoId;
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let known = monorepo(&fake, "known", 3);
    let unknown = monorepo(&fake, "unknown", 2);
    let (source, pool) = source(&fake).await;
    remember(&pool, known, "known").await;
    let storage = source.storage();

    let batch = storage.get_many(&[(RepoId(known), None)]).await;
    assert_eq!(
        paths(&batch[0]),
        [
            "services/s0/project.yaml",
            "services/s1/project.yaml",
            "services/s2/project.yaml"
        ]
    );
    assert_eq!(fake.count(routes::GRAPHQL_READ), 1);
    // Not in the registry: read over REST by id, then its files at the
    // head in one GraphQL query.
    let alone = storage.get(&RepoId(unknown), None).await;
    assert_eq!(
        paths(&alone),
        ["services/s0/project.yaml", "services/s1/project.yaml"]
    );
    assert_eq!(fake.count(routes::CONTENTS), 0);
    assert_eq!(fake.count(routes::GRAPHQL_FILE), 1);
}

#[tokio::test]
async fn a_batch_read_github_refuses_should_be_asked_again_in_halves() {
    use roster::controller::Storage;
    use roster::source::RepoId;
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(monorepo(&fake, &format!("r{n:02}"), 1));
    }
    let big = monorepo(&fake, "big", 1);
    fake.change_files(big, |files| {
        for n in 0..2_000 {
            files.insert(format!("services/s0/gen{n}.go"), b"package gen".to_vec());
        }
    });
    ids.push(big);
    let (source, pool) = source(&fake).await;
    for (n, id) in ids.iter().enumerate() {
        remember(&pool, *id, &format!("r{n:02}")).await;
    }
    fake.refuse_entries_over(Some(2_030));
    let items: Vec<(RepoId, Option<&[u8]>)> = ids.iter().map(|&id| (RepoId(id), None)).collect();
    let states = source.storage().get_many(&items).await;
    for state in &states {
        assert_eq!(paths(state), ["services/s0/project.yaml"]);
    }
    let reads = fake.count(routes::GRAPHQL_READ);
    assert!(reads > 1 && reads < 12, "{reads} batch reads");
    assert_eq!(fake.count(routes::REPO_BY_ID), 0);
}
