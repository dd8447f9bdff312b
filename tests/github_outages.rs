//! GitHub answering badly, end to end through the binary (docs/contract.md#repository-statuses `error`,
//! docs/operations.md#settings retries): slower than the client's 10 s timeout, garbage instead of
//! JSON, or a connection dropped mid-answer. The repository shows `error`
//! with a readable message, its entries stay as they were, it is retried
//! with growing delays, and no worker stays stuck.

use crate::support;
use support::fake_github;
use support::github_server;

use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub, Fault, FaultKind};
use github_server::{github_env, project, project_yaml, push, reconciles, repo, wait_synced, FILE};
use roster::db::testing::fresh_database;
use serde_json::Value;
use support::server::{eventually, Roster};

struct Setup {
    fake: FakeGithub,
    server: Roster,
    _logs: tempfile::TempDir,
    /// `acme/svc`, the repository GitHub fails on.
    svc: i64,
    /// `acme/other`, a bystander.
    other: i64,
}

/// Two synced repositories served by one process with `workers` workers.
async fn setup(workers: usize) -> Setup {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let svc = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "before"));
    let other = fake.add_repo_with_file(1, "other", FILE, &project_yaml("other", "before"));
    let (_pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let mut env = github_env(&fake, &url);
    env.push(("ROSTER_WORKERS", workers.to_string()));
    let server = Roster::start(&env, logs.path()).await;
    for (id, name) in [(svc, "svc"), (other, "other")] {
        let head = fake.head(id).expect("a head");
        wait_synced(&server.base, name, &head, Duration::from_secs(20)).await;
    }
    Setup {
        fake,
        server,
        _logs: logs,
        svc,
        other,
    }
}

/// Waits until `acme/svc` shows `error` with a message containing `needle`.
async fn wait_error(base: &str, needle: &str, limit: Duration) -> Value {
    eventually(&format!("acme/svc in error ({needle})"), limit, || async {
        repo(base, "svc").await.filter(|r| {
            r["status"] == "error" && r["error"].as_str().is_some_and(|e| e.contains(needle))
        })
    })
    .await
}

/// The entry of `acme/svc` is the one from before the fault.
async fn entry_untouched(base: &str) {
    let entry = project(base, "svc").await.expect("the entry is kept");
    assert_eq!(entry["description"], "before", "{entry}");
}

/// The failed attempts on `key` the process logged, in order.
fn failures(server: &Roster, key: i64) -> Vec<Value> {
    reconciles(&[server.log.as_path()])
        .into_iter()
        .filter(|r| r.key == key.to_string() && r.line["message"] == "reconcile failed")
        .map(|r| r.line)
        .collect()
}

/// Keeps failing until two attempts were retried with the backoff of
/// docs/operations.md#settings (1 s, then 2 s, ±20 %), then recovers once GitHub does.
async fn repeated_fault_should_be_retried_with_backoff(kind: FaultKind, needle: &str) {
    let s = setup(2).await;
    let old_head = s.fake.head(s.svc).expect("a head");
    s.fake
        .inject(Fault::always(kind.clone()).on(routes::GRAPHQL_READ));
    let head = s
        .fake
        .push_file(s.svc, FILE, project_yaml("svc", "after").as_bytes());
    assert_eq!(push(&s.server.base, s.svc, "svc").await.status, 202);

    let shown = wait_error(&s.server.base, needle, Duration::from_secs(10)).await;
    entry_untouched(&s.server.base).await;
    assert_eq!(shown["synced_sha"], old_head.as_str(), "{shown}");
    let failed = eventually("three failed attempts", Duration::from_secs(15), || async {
        let failed = failures(&s.server, s.svc);
        (failed.len() >= 3).then_some(failed)
    })
    .await;
    let waits: Vec<u64> = failed
        .iter()
        .map(|f| f["retry_in_ms"].as_u64().expect("retry_in_ms"))
        .collect();
    let attempts: Vec<u64> = failed
        .iter()
        .map(|f| f["attempts"].as_u64().expect("attempts"))
        .collect();
    assert_eq!(attempts[..3], [1, 2, 3], "{failed:?}");
    for (wait, nominal) in waits.iter().zip([1000.0, 2000.0, 4000.0]) {
        let wait = *wait as f64;
        assert!(
            (nominal * 0.8..=nominal * 1.2).contains(&wait),
            "waits {waits:?} do not follow 1 s doubling ±20 %"
        );
    }
    let shown = repo(&s.server.base, "svc").await.expect("the repository");
    assert!(shown["attempts"].as_i64() >= Some(2), "{shown}");
    entry_untouched(&s.server.base).await;
    println!(
        "{kind:?}: error shown as {:?}; retried after {waits:?} ms",
        shown["error"]
    );

    s.fake.clear_faults();
    let recovered = Instant::now();
    wait_synced(&s.server.base, "svc", &head, Duration::from_secs(15)).await;
    let entry = project(&s.server.base, "svc").await.expect("the entry");
    assert_eq!(entry["description"], "after", "{entry}");
    println!(
        "{kind:?}: synced {:?} after GitHub recovered",
        recovered.elapsed()
    );
}

#[tokio::test]
async fn garbage_json_from_github_should_show_error_keep_entries_and_retry_with_backoff() {
    repeated_fault_should_be_retried_with_backoff(
        FaultKind::Garbage,
        "unexpected answer from GitHub",
    )
    .await;
}

#[tokio::test]
async fn connection_dropped_by_github_should_show_error_keep_entries_and_retry_with_backoff() {
    repeated_fault_should_be_retried_with_backoff(FaultKind::Close, "could not reach GitHub").await;
}

#[tokio::test]
async fn github_slower_than_the_timeout_should_free_the_worker_and_show_error() {
    // One worker: if the stalled call held it, nothing else would move.
    let s = setup(1).await;
    s.fake
        .inject(Fault::next(FaultKind::Slow(Duration::from_secs(120)), 1).on(routes::GRAPHQL_READ));
    let head = s
        .fake
        .push_file(s.svc, FILE, project_yaml("svc", "after").as_bytes());
    let other_head = s
        .fake
        .push_file(s.other, FILE, project_yaml("other", "after").as_bytes());
    let sent = Instant::now();
    assert_eq!(push(&s.server.base, s.svc, "svc").await.status, 202);
    assert_eq!(push(&s.server.base, s.other, "other").await.status, 202);

    let shown = wait_error(&s.server.base, "did not answer", Duration::from_secs(20)).await;
    let error = shown["error"].as_str().unwrap_or_default();
    assert!(error.contains("within 10s"), "{error}");
    entry_untouched(&s.server.base).await;
    let failed = failures(&s.server, s.svc);
    let took = failed[0]["duration_ms"].as_u64().expect("duration_ms");
    assert!(
        (10_000..12_000).contains(&took),
        "the stalled attempt took {took} ms, not the 10 s timeout"
    );

    // The single worker goes on: the bystander and the retry both land.
    wait_synced(
        &s.server.base,
        "other",
        &other_head,
        Duration::from_secs(10),
    )
    .await;
    wait_synced(&s.server.base, "svc", &head, Duration::from_secs(10)).await;
    let entry = project(&s.server.base, "svc").await.expect("the entry");
    assert_eq!(entry["description"], "after", "{entry}");
    println!(
        "stalled GitHub: error {error:?} after {took} ms; both repositories synced {:?} after \
         the webhooks",
        sent.elapsed()
    );
}
