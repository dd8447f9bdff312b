//! Several `roster serve` processes on one database, webhooks spread across
//! them round-robin (docs/contract.md#the-reconcile-model "exclusive", "only one replica at a time
//! runs the periodic listing"). Each process logs one JSON line per
//! reconcile and per listing with its duration; from those the tests rebuild
//! who worked on what and when, and check that no two reconciles of one
//! repository overlapped, in one process or across processes.

use crate::support;
use support::fake_github;
use support::github_server;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::Utc;
use fake_github::FakeGithub;
use futures_util::future::join_all;
use github_server::{
    github_env, project, project_yaml, push, reconciles, spans, wait_synced, FILE,
};
use roster::db::testing::fresh_database;
use support::server::{eventually, Roster};

/// Period of the org-wide listing in these tests.
const RESYNC: Duration = Duration::from_secs(2);
const REPOS: usize = 8;
const ROUNDS: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_should_never_reconcile_one_repository_at_once() {
    replicas_should_share_the_work(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_should_never_reconcile_one_repository_at_once() {
    replicas_should_share_the_work(3).await;
}

async fn replicas_should_share_the_work(n: usize) {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let repos: Vec<(i64, String)> = (0..REPOS)
        .map(|i| {
            let name = format!("svc-{i}");
            let id = fake.add_repo_with_file(1, &name, FILE, &project_yaml(&name, "round 0"));
            (id, name)
        })
        .collect();
    // Every GitHub answer takes a while, so reconciles last long enough
    // for overlaps to show if the queue allowed them.
    fake.set_latency(Duration::from_millis(25));
    let (_pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let mut env = github_env(&fake, &url);
    env.push(("ROSTER_RESYNC_INTERVAL", "2s".to_owned()));
    env.push(("ROSTER_WORKERS", "4".to_owned()));
    // One id per claim, so that eight repositories spread over both
    // processes instead of fitting in one process's first batch.
    env.push(("ROSTER_BATCH_SIZE", "1".to_owned()));

    let mut replicas = Vec::new();
    for _ in 0..n {
        replicas.push(Roster::start(&env, logs.path()).await);
    }
    let all_started = Utc::now();

    for round in 1..=ROUNDS {
        let mut sends = Vec::new();
        for (i, (id, name)) in repos.iter().enumerate() {
            let text = project_yaml(name, &format!("round {round}"));
            fake.push_file(*id, FILE, text.as_bytes());
            let base = replicas[(i + round) % n].base.clone();
            sends.push(async move { push(&base, *id, name).await });
        }
        for answer in join_all(sends).await {
            assert_eq!(answer.status, 202, "{}", answer.body);
        }
    }

    // The final registry is right, whichever replica is asked.
    for (i, (id, name)) in repos.iter().enumerate() {
        let base = &replicas[i % n].base;
        let head = fake.head(*id).expect("a head commit");
        wait_synced(base, name, &head, Duration::from_secs(30)).await;
        let entry = project(base, name).await.expect("the entry");
        assert_eq!(entry["description"], format!("round {ROUNDS}"), "{entry}");
        assert_eq!(entry["source_sha"], head.as_str(), "{entry}");
    }

    // Listings: wait for three that started after every replica's own
    // start-up request was served, then check they were one per period.
    let paths: Vec<_> = replicas.iter().map(|r| r.log.clone()).collect();
    let logs_of: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    let settle = all_started + chrono::Duration::milliseconds(1500);
    let listings = eventually(
        "three periodic listings",
        Duration::from_secs(20),
        || async {
            let periodic: Vec<_> = spans(&logs_of, &["listing done"])
                .into_iter()
                .filter(|s| s.start > settle)
                .collect();
            (periodic.len() >= 3).then_some(periodic)
        },
    )
    .await;
    for pair in listings.windows(2) {
        let gap = pair[1].start - pair[0].start;
        assert!(
            gap >= chrono::Duration::milliseconds(1800),
            "two listings within one {RESYNC:?} period: process {} at {} and process {} at {}",
            pair[0].process,
            pair[0].start,
            pair[1].process,
            pair[1].start
        );
    }
    let listers: BTreeSet<usize> = listings.iter().map(|s| s.process).collect();

    // No two reconciles of one repository overlap, across all processes.
    let work = reconciles(&logs_of);
    let mut by_key: BTreeMap<&str, Vec<&github_server::Span>> = BTreeMap::new();
    for span in &work {
        by_key.entry(span.key.as_str()).or_default().push(span);
    }
    for (key, spans) in &by_key {
        for pair in spans.windows(2) {
            assert!(
                pair[0].end <= pair[1].start,
                "repository {key} reconciled twice at once: process {} from {} to {}, \
                 process {} from {} to {}",
                pair[0].process,
                pair[0].start,
                pair[0].end,
                pair[1].process,
                pair[1].start,
                pair[1].end
            );
        }
    }
    assert_eq!(by_key.len(), REPOS, "every repository was reconciled");
    let shared = by_key
        .values()
        .filter(|spans| {
            spans
                .iter()
                .map(|s| s.process)
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .count();
    assert!(
        shared > 0,
        "no repository was reconciled by two processes: the test proved nothing"
    );
    let per_process: Vec<usize> = (0..n)
        .map(|p| work.iter().filter(|s| s.process == p).count())
        .collect();
    println!(
        "{n} replicas: {} reconciles ({per_process:?} per process), {shared} of {REPOS} \
         repositories handled by more than one process, no overlap; {} listings checked, \
         run by processes {listers:?}",
        work.len(),
        listings.len()
    );
}
