//! The attack of docs/contract.md#bounds on the real binary: a repository whose project file
//! is 256 KiB of `projects: [{},{},…]`, resynced 50 times. Before the bounds,
//! each reconcile stored an 11.9 MB error and another copy of it as an
//! event; after 53 resyncs one repository answer weighed 614 MB. Now every
//! answer about it stays small, the server's memory too, and the entries it
//! had stay registered.
//!
//! `cargo test --test suite hostile_file_e2e:: -- --nocapture` prints the figures.

use crate::support;

use std::path::Path;
use std::time::Duration;

use axum::http::Method;
use serde_json::Value;
use support::http::{get, send};
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);
const TOKEN: &str = "hostile-file-token";
const RESYNCS: i64 = 50;
/// Largest answer allowed about the attacked repository.
const MAX_ANSWER: usize = 64 * 1024;
/// Largest peak resident memory allowed for the server.
const MAX_RSS_KIB: u64 = 100 * 1024;

const GOOD: &str = "projects:
  - name: amp-api
    owner: team-amp
    description: The amplifier's API
    tags: [audio]
  - name: amp-worker
    owner: team-amp
";

/// 256 KiB of empty projects, each missing both required fields.
fn hostile_file() -> String {
    let mut yaml = String::from("projects: [{}");
    while yaml.len() + ",{}]\n".len() <= 256 * 1024 {
        yaml.push_str(",{}");
    }
    yaml.push_str("]\n");
    yaml
}

async fn json(roster: &Roster, path: &str) -> Value {
    get(&roster.url(path))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .json()
}

/// The newest event of `local/amp` with kind `invalid`: its count.
fn invalid_count(repo: &Value) -> i64 {
    repo["events"]
        .as_array()
        .and_then(|events| events.iter().find(|e| e["kind"] == "invalid"))
        .and_then(|event| event["count"].as_i64())
        .unwrap_or(0)
}

/// Peak resident memory of a process, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[tokio::test]
async fn a_hostile_project_file_resynced_50_times_should_keep_every_answer_small() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = dir.path().join("org");
    let file = org.join("amp/project.yaml");
    std::fs::create_dir_all(file.parent().unwrap_or(Path::new("."))).expect("mkdir");
    std::fs::write(&file, GOOD).expect("write");
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        ("ROSTER_API_TOKEN", TOKEN.to_string()),
    ];
    let roster = Roster::start(&env, dir.path()).await;

    // Synced first, so that there are entries to keep.
    eventually("local/amp synced", LIMIT, || async {
        let repo = get(&roster.url("/api/v1/repos/local/amp")).await.ok()?;
        (repo.status == 200 && repo.json()["status"] == "synced").then_some(())
    })
    .await;
    let entries_before = json(&roster, "/api/v1/projects").await;
    assert_eq!(entries_before["items"].as_array().map(Vec::len), Some(2));

    // The attack: the folder watcher reconciles it once.
    std::fs::write(&file, hostile_file()).expect("write hostile file");
    let mut count = eventually("local/amp invalid", LIMIT, || async {
        let repo = json(&roster, "/api/v1/repos/local/amp").await;
        (repo["status"] == "invalid").then(|| invalid_count(&repo))
    })
    .await;
    assert!(count >= 1);

    // Then 50 resyncs, each awaited until its reconcile counted.
    let auth = format!("Bearer {TOKEN}");
    for _ in 0..RESYNCS {
        let answer = send(
            Method::POST,
            &roster.url("/api/v1/repos/local/amp/resync"),
            &[("authorization", auth.as_str())],
            Vec::new(),
        )
        .await
        .expect("resync");
        assert_eq!(answer.status, 202, "{}", answer.body);
        let at_least = count + 1;
        count = eventually("the resync's reconcile", LIMIT, || async {
            let now = invalid_count(&json(&roster, "/api/v1/repos/local/amp").await);
            (now >= at_least).then_some(now)
        })
        .await;
    }

    // Every answer about it is small.
    for path in [
        "/api/v1/repos",
        "/api/v1/repos/local/amp",
        "/api/v1/projects",
        "/",
        "/repos/local/amp",
    ] {
        let answer = get(&roster.url(path)).await.expect("answer");
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        println!("GET {path}: {} bytes", answer.body.len());
        assert!(
            answer.body.len() < MAX_ANSWER,
            "GET {path} answered {} bytes",
            answer.body.len()
        );
    }

    // So is the server.
    let peak = peak_rss_kib(roster.child.id());
    println!("server peak RSS (VmHWM): {peak} kB");
    assert!(peak < MAX_RSS_KIB, "VmHWM {peak} kB");

    // Invalid, the entries registered as they were, and one event counting
    // every reconcile of the hostile file instead of one row each.
    let repo = json(&roster, "/api/v1/repos/local/amp").await;
    assert_eq!(repo["status"], "invalid");
    let error = repo["error"].as_str().unwrap_or_default();
    println!(
        "stored error: {} bytes, {} lines",
        error.len(),
        error.lines().count()
    );
    assert!(
        error.starts_with("project.yaml:1:11: projects: at most 100 entries"),
        "{error}"
    );
    assert!(
        error.ends_with("project.yaml: file: … and 101 more problems"),
        "{error}"
    );
    assert_eq!(error.lines().count(), 101);
    assert_eq!(
        repo["projects"],
        serde_json::json!(["amp-api", "amp-worker"])
    );
    assert_eq!(json(&roster, "/api/v1/projects").await, entries_before);
    let events = repo["events"].as_array().expect("events");
    let invalid: Vec<&Value> = events.iter().filter(|e| e["kind"] == "invalid").collect();
    assert_eq!(invalid.len(), 1, "{events:?}");
    println!(
        "events: {} rows, the invalid one ×{}",
        events.len(),
        invalid[0]["count"]
    );
    assert!(invalid[0]["count"].as_i64().unwrap_or(0) > RESYNCS);
    assert!(events.len() <= 3, "{events:?}");
    let list = json(&roster, "/api/v1/repos").await;
    assert_eq!(
        list["items"][0]["error"].as_str(),
        error.lines().next(),
        "the list shows the first line"
    );
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}
