//! `**` patterns on GitHub, through the real `roster serve` against the
//! fake GitHub: the Git trees API is asked only for a repository whose root
//! tree changed since its last walk, the matching blobs are read in batched
//! GraphQL queries at the commit whose tree was walked (a head that moves
//! meanwhile is the next read's), and a tree GitHub truncates is walked folder by folder
//! or, when even that is too large, makes the repository `invalid` with its
//! entries kept.

use crate::support;
use support::fake_github;

use fake_github::{routes, FakeGithub};
use serde_json::Value;
use support::github_app::resync;
use support::http::get;
use support::monorepo_server::{names, yaml, Env};

const ACME: i64 = 1;

/// Resyncs and waits until `acme/{name}` shows commit `sha` applied.
async fn resync_until(env: &Env, name: &str, sha: &str) -> Value {
    assert!(resync(&env.roster.url("")).await.status.is_success());
    env.repo_until(name, "the new head", |r| r["synced_sha"] == sha)
        .await
}

#[tokio::test]
async fn any_depth_should_walk_a_tree_once_until_it_changes() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let deep = fake.add_repo(ACME, "deep");
    fake.change_files(deep, |files| {
        files.insert("project.yaml".into(), yaml("deep-root"));
        files.insert("a/b/c/project.yaml".into(), yaml("deep-c"));
        files.insert("x/project.yaml".into(), yaml("deep-x"));
        files.insert("x/main.go".into(), b"package x".to_vec());
    });
    let plain = fake.add_repo(ACME, "plain");
    fake.push_file(plain, "src/lib.rs", b"fn main() {}");
    let env = Env::start(fake, "**/project.yaml").await;

    let synced = env
        .repo_until("deep", "synced", |r| r["status"] == "synced")
        .await;
    assert_eq!(
        names(&synced),
        ["deep-c", "deep-root", "deep-x"],
        "{synced}"
    );
    env.repo_until("plain", "no file", |r| r["status"] == "no_file")
        .await;
    let c = get(&env.roster.url("/api/v1/projects/deep-c"))
        .await
        .expect("entry")
        .json();
    assert_eq!(c["path"], "a/b/c/project.yaml");
    // One tree per repository, the blobs of both in one query.
    assert_eq!(env.fake.count(routes::GIT_TREE), 2);
    assert_eq!(env.fake.count(routes::GRAPHQL_BLOBS), 1);

    // A listing with no change: no tree asked again.
    let head = env.fake.head(plain).expect("head");
    let plain_sha = env.fake.change_files(plain, |_| {});
    assert_ne!(plain_sha, head);
    resync_until(&env, "plain", &plain_sha).await;
    assert_eq!(env.fake.count(routes::GIT_TREE), 2);

    // A change anywhere in the tree: that repository's tree again.
    let sha = env.fake.change_files(deep, |files| {
        files.insert("a/b/project.yaml".into(), yaml("deep-b"));
    });
    let changed = resync_until(&env, "deep", &sha).await;
    assert_eq!(
        names(&changed),
        ["deep-b", "deep-c", "deep-root", "deep-x"],
        "{changed}"
    );
    assert_eq!(env.fake.count(routes::GIT_TREE), 3);
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_head_moving_between_the_walk_and_the_blob_read_should_not_mix_commits() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let deep = fake.add_repo(ACME, "deep");
    let first = fake.change_files(deep, |files| {
        files.insert("a/project.yaml".into(), yaml("deep-a"));
        files.insert("b/project.yaml".into(), yaml("deep-b"));
    });
    // Right after GitHub answers the walk of `first`'s tree, the branch
    // moves on: `a` declares another name, `b` goes, `c` comes.
    fake.change_files_after(routes::GIT_TREE, deep, |files| {
        files.insert("a/project.yaml".into(), yaml("deep-a2"));
        files.remove("b/project.yaml");
        files.insert("c/project.yaml".into(), yaml("deep-c"));
    });
    let env = Env::start(fake, "**/project.yaml").await;

    let synced = env
        .repo_until("deep", "read", |r| r["status"] != "pending")
        .await;
    let second = env.fake.head(deep).expect("head");
    assert_ne!(second, first, "the head moved during the read");
    // The walked tree's paths, the walked commit's texts, that commit synced.
    assert_eq!(synced["status"], "synced", "{synced}");
    assert_eq!(synced["synced_sha"], first.as_str(), "{synced}");
    assert_eq!(names(&synced), ["deep-a", "deep-b"], "{synced}");
    assert_eq!(env.fake.count(routes::GIT_TREE), 1);

    // The next listing reads the new head whole: its tree, its texts.
    let moved = resync_until(&env, "deep", &second).await;
    assert_eq!(moved["status"], "synced", "{moved}");
    assert_eq!(names(&moved), ["deep-a2", "deep-c"], "{moved}");
    assert_eq!(env.fake.count(routes::GIT_TREE), 2);
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_truncated_tree_should_be_walked_by_folder_or_fail_clearly() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    // 4 folders of 20 files: 84 entries, over a cap of 50 as a whole, each
    // folder under it.
    let wide = fake.add_repo(ACME, "wide");
    fake.change_files(wide, |files| {
        for folder in 0..4 {
            files.insert(
                format!("f{folder}/project.yaml"),
                yaml(&format!("wide-{folder}")),
            );
            for n in 0..19 {
                files.insert(format!("f{folder}/gen{n}.txt"), b"x".to_vec());
            }
        }
    });
    // One folder of 60 entries: over the cap even alone.
    let crowded_id = fake.add_repo(ACME, "crowded");
    fake.change_files(crowded_id, |files| {
        files.insert("svc/project.yaml".into(), yaml("crowded-svc"));
    });
    fake.set_tree_entry_cap(50);
    let env = Env::start(fake, "**/project.yaml").await;

    let wide = env
        .repo_until("wide", "synced", |r| r["status"] == "synced")
        .await;
    assert_eq!(
        names(&wide),
        ["wide-0", "wide-1", "wide-2", "wide-3"],
        "{wide}"
    );
    let crowded_synced = env
        .repo_until("crowded", "synced", |r| r["status"] == "synced")
        .await;
    assert_eq!(names(&crowded_synced), ["crowded-svc"]);

    let crowded = env.fake.change_files(crowded_id, |files| {
        for n in 0..60 {
            files.insert(format!("svc/gen{n}.txt"), b"x".to_vec());
        }
    });
    assert!(resync(&env.roster.url("")).await.status.is_success());
    let invalid = env
        .repo_until("crowded", "invalid", |r| r["status"] == "invalid")
        .await;
    let error = invalid["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("too many entries for GitHub to list"),
        "{invalid}"
    );
    assert_eq!(names(&invalid), ["crowded-svc"], "entries kept");
    assert_ne!(invalid["synced_sha"], crowded.as_str());
    assert!(env.roster.terminate().success());
}
