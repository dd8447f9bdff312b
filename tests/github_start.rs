//! Start-up against GitHub: an App id that does not match the key stops the
//! server with one line naming the setting, like any other misconfiguration.

use crate::support;
use support::fake_github;
use support::github_app;

use std::process::Command;
use std::time::Duration;

use fake_github::{FakeGithub, APP_ID, PRIVATE_KEY};

#[tokio::test]
async fn a_wrong_app_id_should_stop_the_server_with_one_line() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database");
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let env = github_app::server_env(APP_ID + 1, PRIVATE_KEY, &api, &graphql, &url);
    let port = support::server::free_port();
    let output = tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_roster"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ROSTER_LISTEN", format!("127.0.0.1:{port}"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output()
    })
    .await
    .expect("join")
    .expect("run roster");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].starts_with("error: GITHUB_APP_ID: GitHub refused the App's token"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `GITHUB_URL` names where people see repositories (GitHub Enterprise
/// Server's web host, a proxy): the repository page links there, not to
/// the API's host.
#[tokio::test]
async fn repository_links_should_follow_github_url() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    fake.add_repo_with_file(
        1,
        "svc",
        "project.yaml",
        "projects:\n  - name: svc\n    owner: team-a\n",
    );
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database");
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let mut env = github_app::server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    env.push(("GITHUB_URL", "https://ghe.example.com/".to_owned()));
    let logs = tempfile::tempdir().expect("log dir");
    let roster = support::server::Roster::start(&env, logs.path()).await;
    let page = support::server::eventually("the repository page", Duration::from_secs(30), || {
        let address = roster.url("/repos/acme/svc");
        async move {
            let answer = support::http::get(&address).await.ok()?;
            (answer.status == 200 && answer.body.contains("synced")).then_some(answer.body)
        }
    })
    .await;
    assert!(
        page.contains("https://ghe.example.com/acme/svc"),
        "the page links to GITHUB_URL's host: {page}"
    );
    assert!(
        !page.contains(&format!("{}acme/svc\"", fake.api_url())),
        "no link to the API's host"
    );
}
