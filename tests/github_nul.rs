//! A raw NUL byte in a project file on GitHub: GitHub's GraphQL calls such
//! a file binary and shows no text, so Roster reads its bytes over REST
//! once, when the observation is applied, and reports the NUL at its line
//! and column as the folder source does — on the repository's status and
//! API and on a pull request's check. The entries registered before are
//! kept, and the listing of an organisation where nothing changed still
//! costs its pages alone. The same for each of several project files
//! (`ROSTER_PROJECT_FILES` with patterns), read at its own path.

use crate::checks::{env, yaml, FILE};
use crate::support;
use support::fake_github;
use support::github_app;
use support::github_counts::{rest_reads, settle};

use std::time::Duration;

use fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use github_app::{resync, server_env};
use serde_json::Value;
use support::http::get;
use support::server::{eventually, Roster};

const ACME: i64 = 1;
const LIMIT: Duration = Duration::from_secs(60);
const MESSAGE: &str = "file: contains a NUL character (U+0000), which a project file may not hold";
/// A NUL at line 3, column 7.
const NUL_AT_3_7: &[u8] = b"name: amp\nowner: team-amp\ndescri\0ption: x\n";

async fn json(roster: &Roster, path: &str) -> Value {
    get(&roster.url(path))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .json()
}

/// Waits until `count` listings are done and every one of `repos`
/// repositories is final.
async fn listed(roster: &Roster, pool: &sqlx::PgPool, count: usize, repos: usize) {
    eventually("the listings done", LIMIT, || async {
        (roster.logs().matches("listing done").count() >= count).then_some(())
    })
    .await;
    settle(pool, repos, LIMIT)
        .await
        .expect("every repository final");
}

#[tokio::test]
async fn a_nul_read_from_github_should_be_reported_at_its_line_and_column_and_cost_no_more_reads() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let amp = fake.add_repo_with_file(ACME, "amp", FILE, &yaml("amp", "fine"));
    fake.add_repo_with_file(ACME, "other", FILE, &yaml("other", "fine"));
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    let roster = Roster::start(&env, dir.path()).await;
    listed(&roster, &pool, 1, 2).await;
    let before = json(&roster, "/api/v1/projects").await;
    assert_eq!(before["items"].as_array().map(Vec::len), Some(2));

    // The NUL pushed; the next listing sees a binary file and the worker
    // reads its bytes once.
    fake.push_file(amp, FILE, NUL_AT_3_7);
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 2, 2).await;
    let repo = json(&roster, "/api/v1/repos/acme/amp").await;
    assert_eq!(repo["status"], "invalid", "{repo}");
    assert_eq!(repo["error"], format!("{FILE}:3:7: {MESSAGE}"));
    assert_eq!(repo["projects"], serde_json::json!(["amp"]));
    assert_eq!(json(&roster, "/api/v1/projects").await, before);
    assert_eq!(
        fake.count(routes::CONTENTS),
        1,
        "one read of the file's bytes"
    );

    // Nothing changed: the next listing costs its page alone, and the
    // error stays where it was.
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 3, 2).await;
    let reads = fake.count(routes::GRAPHQL_READ) + rest_reads(&fake);
    assert_eq!(
        (fake.count(routes::GRAPHQL), reads),
        (1, 0),
        "an unchanged organisation's listing: its page alone"
    );
    let repo = json(&roster, "/api/v1/repos/acme/amp").await;
    assert_eq!(repo["error"], format!("{FILE}:3:7: {MESSAGE}"));
    assert_eq!(json(&roster, "/api/v1/projects").await, before);
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn a_file_that_is_binary_beyond_nuls_should_stay_binary_and_be_read_once() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let amp = fake.add_repo_with_file(ACME, "amp", FILE, &yaml("amp", "fine"));
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    let roster = Roster::start(&env, dir.path()).await;
    listed(&roster, &pool, 1, 1).await;

    fake.push_file(amp, FILE, b"name: amp\n\xff\xfe\0\n");
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 2, 1).await;
    let repo = json(&roster, "/api/v1/repos/acme/amp").await;
    assert_eq!(repo["status"], "invalid", "{repo}");
    assert_eq!(repo["error"], "the file is binary, not UTF-8 text");
    assert_eq!(repo["projects"], serde_json::json!(["amp"]));
    assert_eq!(fake.count(routes::CONTENTS), 1);

    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 3, 1).await;
    assert_eq!(rest_reads(&fake), 0, "the blob's judgement stands");
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn a_pull_requests_check_should_annotate_a_nul_at_its_line_and_column() {
    let env = env().await;
    let id = env.repo("amp", &yaml("amp", "fine")).await;
    env.quiet().await;
    let sha = env.fake.pr_commit(id, FILE, NUL_AT_3_7);
    env.open_pr(id, "amp", 3, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    let summary = run.summary.clone().unwrap_or_default();
    assert!(
        summary.contains(&format!("{FILE}:3:7: {MESSAGE}")),
        "{summary}"
    );
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let note = &run.annotations[0];
    assert_eq!(note["path"], FILE);
    assert_eq!(
        (note["start_line"].as_u64(), note["start_column"].as_u64()),
        (Some(3), Some(7))
    );
    assert_eq!(env.fake.count(routes::CONTENTS), 1, "one read of the bytes");
}

/// The server on a fresh database reading `patterns` from `fake`, once
/// its first listing is done and `repos` repositories are final.
async fn start_with_patterns(
    fake: &FakeGithub,
    patterns: &str,
    repos: usize,
) -> (Roster, sqlx::PgPool, tempfile::TempDir) {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let mut env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "1h".to_owned()));
    env.push(("ROSTER_PROJECT_FILES", patterns.to_owned()));
    let roster = Roster::start(&env, dir.path()).await;
    listed(&roster, &pool, 1, repos).await;
    (roster, pool, dir)
}

/// `acme/{name}` with `services/a` and `services/b`, declaring
/// `{name}-a` and `{name}-b`.
fn monorepo(fake: &FakeGithub, name: &str) -> i64 {
    let id = fake.add_repo(ACME, name);
    let name = name.to_owned();
    fake.change_files(id, move |files| {
        for (path, s) in [(SERVICE_A, "a"), (SERVICE_B, "b")] {
            let entry = yaml(&format!("{name}-{s}"), "fine");
            files.insert(path.into(), entry.into_bytes());
        }
    });
    id
}

const SERVICE_A: &str = "services/a/project.yaml";
const SERVICE_B: &str = "services/b/project.yaml";

#[tokio::test]
async fn a_nul_in_one_of_several_files_should_be_reported_at_its_line_and_column() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let mono = monorepo(&fake, "mono");
    monorepo(&fake, "other");
    let (roster, pool, _dir) = start_with_patterns(&fake, "services/*/project.yaml", 2).await;
    let before = json(&roster, "/api/v1/projects").await;
    assert_eq!(before["items"].as_array().map(Vec::len), Some(4));

    fake.push_file(mono, SERVICE_A, NUL_AT_3_7);
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 2, 2).await;
    let repo = json(&roster, "/api/v1/repos/acme/mono").await;
    assert_eq!(repo["status"], "invalid", "{repo}");
    assert_eq!(repo["error"], format!("{SERVICE_A}:3:7: {MESSAGE}"));
    assert_eq!(repo["projects"], serde_json::json!(["mono-a", "mono-b"]));
    assert_eq!(json(&roster, "/api/v1/projects").await, before);
    assert_eq!(
        fake.count(routes::CONTENTS),
        1,
        "one read of the file's bytes"
    );

    // Nothing changed: the next listing costs its page alone, and the
    // file keeps its line and column.
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 3, 2).await;
    let reads = fake.count(routes::GRAPHQL_READ) + rest_reads(&fake);
    assert_eq!(
        (fake.count(routes::GRAPHQL), reads),
        (1, 0),
        "an unchanged organisation's listing: its page alone"
    );
    let repo = json(&roster, "/api/v1/repos/acme/mono").await;
    assert_eq!(repo["error"], format!("{SERVICE_A}:3:7: {MESSAGE}"));
    assert_eq!(json(&roster, "/api/v1/projects").await, before);

    // The file fixed: applied again, the error gone.
    fake.push_file(mono, SERVICE_A, yaml("mono-a", "fine").as_bytes());
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 4, 2).await;
    let repo = json(&roster, "/api/v1/repos/acme/mono").await;
    assert_eq!(repo["status"], "synced", "{repo}");
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn one_of_several_files_binary_beyond_nuls_should_stay_binary_and_be_read_once() {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let mono = monorepo(&fake, "mono");
    // `**` finds the files by walking the tree, and reads them by blob.
    let (roster, pool, _dir) = start_with_patterns(&fake, "**/project.yaml", 1).await;

    fake.push_file(mono, SERVICE_B, b"name: mono-b\n\xff\xfe\0\n");
    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 2, 1).await;
    let repo = json(&roster, "/api/v1/repos/acme/mono").await;
    assert_eq!(repo["status"], "invalid", "{repo}");
    assert_eq!(
        repo["error"],
        format!("{SERVICE_B}: file: the file is binary, not UTF-8 text")
    );
    assert_eq!(repo["projects"], serde_json::json!(["mono-a", "mono-b"]));
    assert_eq!(fake.count(routes::CONTENTS), 1);

    fake.reset_counts();
    assert_eq!(resync(&roster.base).await.status, 202);
    listed(&roster, &pool, 3, 1).await;
    assert_eq!(rest_reads(&fake), 0, "the blob's judgement stands");
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}
