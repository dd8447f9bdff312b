//! The GitHub source's read pace against the fake GitHub: it follows the
//! budget GitHub reports, keeping the next listing's pages in reserve.

use crate::support;
use support::fake_github;

use std::sync::Arc;
use std::time::Duration;

use fake_github::FakeGithub;
use prometheus_client::registry::Registry;
use roster::controller::{Lister, ReadPace, Storage};
use roster::db::testing::fresh_database;
use roster::github::storage::READ_PACE;
use roster::github::{GithubOptions, GithubSource};
use roster::metrics::Metrics;
use roster::source::RepoId;

/// A fake GitHub with installation 1 and `repos` repositories, and a
/// source connected to it.
async fn source(repos: usize) -> (FakeGithub, GithubSource, Vec<i64>) {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let ids = (0..repos)
        .map(|n| fake.add_repo(1, &format!("r{n:03}")))
        .collect();
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let source = GithubSource::connect_with(
        &fake.settings(),
        "project.yaml",
        pool,
        metrics,
        GithubOptions::default(),
    )
    .await
    .expect("connect");
    (fake, source, ids)
}

fn pace(source: &GithubSource) -> ReadPace {
    source
        .storage()
        .read_pace()
        .expect("GitHub reads are paced")
}

#[tokio::test]
async fn a_low_budget_should_slow_reads_and_keep_the_next_listing_in_reserve() {
    let (fake, source, ids) = source(2_000).await;
    assert_eq!(pace(&source), READ_PACE, "before GitHub told any budget");

    // Twenty pages listed; GitHub reports almost the whole hour's budget.
    source.lister().list().await.expect("listing");
    let full = pace(&source);
    assert_eq!(
        full, READ_PACE,
        "a full budget allows more than the fixed pace, which stays the fastest"
    );

    // GitHub says 300 REST requests are left this hour: the read below
    // spends 3, and 22 stay for the next listing (20 pages and a tenth).
    fake.set_remaining(1, "core", 300);
    source
        .storage()
        .get(&RepoId(ids[0]), None)
        .await
        .expect("a read");
    let low = pace(&source);
    assert_eq!(low.burst, READ_PACE.burst, "{low:?}");
    assert!(
        low.every >= Duration::from_secs(3_590) / 275
            && low.every <= Duration::from_secs(3_600) / 275,
        "275 spare requests spread over the hour: {low:?}"
    );
}
