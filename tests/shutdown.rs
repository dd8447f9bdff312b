//! SIGTERM stops the real `roster serve` cleanly: exit code 0, well within
//! the stop deadline, and every task the server spawned joined, none left
//! running. The server's last log line counts them (`spawned`, `joined`,
//! `panicked`, and `alive`: the runtime's tasks still running then).

use std::time::{Duration, Instant};

use crate::support;
use support::fake_github::{FakeGithub, APP_ID, PRIVATE_KEY};
use support::github_app::{deliver, push, server_env, Repo};
use support::http::get;
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);

/// The numbers of the server's `stopped` line, by name.
fn stopped_line(logs: &str) -> Vec<(String, usize)> {
    let line = logs
        .lines()
        .find(|l| l.contains("stopped: every task joined"))
        .unwrap_or_else(|| panic!("no stopped line in: {logs}"));
    let plain: String = strip_colours(line);
    plain
        .split_whitespace()
        .filter_map(|word| word.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect()
}

/// The log without the terminal colour codes, if the format has any.
fn strip_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn value(fields: &[(String, usize)], name: &str) -> usize {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("{name} missing from {fields:?}"))
}

#[tokio::test]
async fn sigterm_should_exit_cleanly_with_every_task_joined() {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(
        1,
        "checkout",
        "project.yaml",
        "name: checkout\nowner: team-a\n",
    );
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    let roster = Roster::start(&env, dir.path()).await;
    eventually("the repository synced", LIMIT, || async {
        let answer = get(&roster.url("/api/v1/repos/acme/checkout")).await.ok()?;
        (answer.json()["status"] == "synced").then_some(())
    })
    .await;
    // Webhooks start the group commit's writers and the delivery log's:
    // they are joined too, the log once every answered delivery is in it.
    let repo = Repo::new(id, 1, "acme", "checkout");
    let answers = futures_util::future::join_all(
        (0..100).map(|_| deliver(&roster.base, "push", push(&repo, "a", "b"))),
    )
    .await;
    assert!(
        answers.iter().all(|a| a.status == 202),
        "not every push got 202"
    );

    let asked = Instant::now();
    let log = roster.log.clone();
    let status = roster.terminate();
    let took = asked.elapsed();
    let logs = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "exit status {status}: {logs}");
    assert!(
        took < roster::shutdown::STOP_DEADLINE,
        "stopping took {took:?}"
    );
    let fields = stopped_line(&logs);
    let (spawned, joined) = (value(&fields, "spawned"), value(&fields, "joined"));
    // The signal, memory trimming, the directory, checks, redelivery and
    // both prunings, and the webhook writers, at least.
    assert!(spawned >= 8, "{fields:?}");
    assert_eq!(joined, spawned, "{fields:?}");
    assert_eq!(value(&fields, "panicked"), 0, "{fields:?}");
    let exiting = logs
        .lines()
        .find(|l| l.contains("exiting: tasks of the runtime still running"))
        .map(strip_colours)
        .unwrap_or_else(|| panic!("no exiting line in: {logs}"));
    assert!(exiting.contains("alive=0"), "tasks left behind: {exiting}");
    assert!(
        !logs.contains("did not finish in time"),
        "the deadline fired: {logs}"
    );
    let logged: i64 = sqlx::query_scalar("select count(*) from deliveries where event = 'push'")
        .fetch_one(&pool)
        .await
        .expect("the delivery log");
    assert_eq!(
        logged, 100,
        "answered deliveries missing from the log after the stop"
    );
}
