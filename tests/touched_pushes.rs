//! A push that touched some project files of a monorepo, through the real
//! `roster serve` against the fake GitHub: the run reads only those files,
//! at the push's commit, in one GraphQL request (no tree walk, no batch
//! read), and the registry keeps the other files' entries as they were. A
//! push that does not follow the recorded commit is read whole.

use crate::support;
use support::fake_github;

use fake_github::{routes, FakeGithub};
use serde_json::{json, Value};
use support::github_app::{deliver, push_of_commits, Repo};
use support::monorepo_server::{names, yaml, Env};

const ACME: i64 = 1;
const SERVICES: [&str; 5] = ["s0", "s1", "s2", "s3", "s4"];

fn path(service: &str) -> String {
    format!("services/{service}/project.yaml")
}

/// `acme/mono` with 5 service files, served under `patterns`, synced.
async fn mono(patterns: &str) -> (Env, Repo) {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let id = fake.add_repo(ACME, "mono");
    fake.change_files(id, |files| {
        for s in SERVICES {
            files.insert(path(s), yaml(&format!("mono-{s}")));
        }
        files.insert("services/s0/main.go".into(), b"package s0".to_vec());
    });
    let env = Env::start(fake, patterns).await;
    env.repo_until("mono", "synced", |r| r["status"] == "synced")
        .await;
    (env, Repo::new(id, ACME, "acme", "mono"))
}

/// A push from `before` to `after` of one commit listing these paths.
fn push(repo: &Repo, before: &str, after: &str, touched: [&[String]; 3]) -> Vec<u8> {
    let mut body: Value =
        serde_json::from_slice(&push_of_commits(repo, before, after, &[(after, &[])]))
            .expect("a push");
    let [added, modified, removed] = touched;
    body["commits"][0]["added"] = json!(added);
    body["commits"][0]["modified"] = json!(modified);
    body["commits"][0]["removed"] = json!(removed);
    serde_json::to_vec(&body).expect("json")
}

/// Delivers `body` and waits until `acme/mono` has synced `sha`; the
/// GitHub reads it took, by route, in order.
async fn delivered(env: &Env, body: Vec<u8>, sha: &str) -> (Vec<&'static str>, Value) {
    let before = env.fake.log().len();
    let answer = deliver(&env.roster.url(""), "push", body).await;
    assert_eq!(answer.status.as_u16(), 202);
    let repo = env
        .repo_until("mono", "the push applied", |r| r["synced_sha"] == sha)
        .await;
    // The default branch's check run for the changed file is posted
    // beside the read, on its own time: only reads are counted.
    let routes = env.fake.log()[before..]
        .iter()
        .map(|l| l.route)
        .filter(|r| *r != routes::CHECK_RUN_CREATE && *r != routes::CHECK_RUN_UPDATE)
        .collect();
    (routes, repo)
}

async fn partial_read_of_one_file(patterns: &str) {
    let (env, repo) = mono(patterns).await;
    let old = env.fake.head(repo.id).expect("head");
    let s0_before = env.project("mono-s0").await;
    let new = env.fake.change_files(repo.id, |files| {
        files.insert(
            path("s2"),
            b"name: mono-s2\nowner: team-x\ndescription: v1\n".to_vec(),
        );
    });
    let (requests, synced) = delivered(
        &env,
        push(&repo, &old, &new, [&[], &[path("s2")], &[]]),
        &new,
    )
    .await;
    assert_eq!(
        requests,
        [routes::GRAPHQL_TOUCHED],
        "{patterns}: one request"
    );
    assert_eq!(synced["status"], "synced");
    let s2 = env.project("mono-s2").await;
    assert_eq!(s2["description"], "v1", "{s2}");
    assert_eq!(s2["source_sha"], new.as_str());
    // The untouched files' entries as they were.
    assert_eq!(env.project("mono-s0").await, s0_before);
    assert_eq!(names(&synced).len(), 5, "{synced}");
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_push_touching_one_of_five_files_should_read_only_that_file() {
    partial_read_of_one_file("services/*/project.yaml").await;
    partial_read_of_one_file("**/project.yaml").await;
}

#[tokio::test]
async fn a_removed_file_and_a_move_should_be_read_in_part_and_applied() {
    let (env, repo) = mono("services/*/project.yaml").await;
    let old = env.fake.head(repo.id).expect("head");
    let new = env.fake.change_files(repo.id, |files| {
        files.remove(&path("s4"));
        let moved = files.remove(&path("s3")).unwrap_or_default();
        files.insert(path("s9"), moved);
    });
    let body = push(
        &repo,
        &old,
        &new,
        [&[path("s9")], &[], &[path("s3"), path("s4")]],
    );
    let (requests, synced) = delivered(&env, body, &new).await;
    assert_eq!(requests, [routes::GRAPHQL_TOUCHED]);
    assert_eq!(
        names(&synced),
        ["mono-s0", "mono-s1", "mono-s2", "mono-s3"],
        "{synced}"
    );
    let moved = env.project("mono-s3").await;
    assert_eq!(moved["path"], path("s9").as_str(), "{moved}");
    let history = env.history("mono-s3").await;
    assert_eq!(history["items"][0]["kind"], "changed", "{history}");
    assert!(env.roster.terminate().success());
}

#[tokio::test]
async fn a_push_that_does_not_follow_the_recorded_commit_should_be_read_whole() {
    let (env, repo) = mono("services/*/project.yaml").await;
    let old = env.fake.head(repo.id).expect("head");
    // A push Roster never heard of, then one from there.
    let missed = env.fake.change_files(repo.id, |files| {
        files.remove(&path("s1"));
    });
    let new = env.fake.change_files(repo.id, |files| {
        files.insert(path("s2"), yaml("mono-s2b"));
    });
    assert_ne!(old, missed);
    let body = push(&repo, &missed, &new, [&[], &[path("s2")], &[]]);
    let (_, synced) = delivered(&env, body, &new).await;
    assert_eq!(
        env.fake.count(routes::GRAPHQL_TOUCHED),
        0,
        "no partial read"
    );
    assert_eq!(
        names(&synced),
        ["mono-s0", "mono-s2b", "mono-s3", "mono-s4"],
        "the missed push applied too: {synced}"
    );
    assert!(env.roster.terminate().success());
}
