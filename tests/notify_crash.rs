//! `kill -9` of the real server while it delivers notifications: after a
//! restart the target receives every change, in `seq` order; a change sent
//! twice (acknowledged, but the process died before it moved the cursor)
//! carries the same delivery id both times.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::receiver::{Behaviour, Receiver};
use support::server::{eventually, Roster};

const SECRET: &str = "crash-secret";
const REPOS: i64 = 8;

#[tokio::test]
async fn notifications_should_all_arrive_in_order_after_a_kill_9_and_a_restart() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = dir.path().join("org");
    for n in 0..REPOS {
        let repo = org.join(format!("svc{n}"));
        std::fs::create_dir_all(&repo).expect("mkdir");
        std::fs::write(
            repo.join("project.yaml"),
            format!("projects:\n  - name: svc{n}\n    owner: team-{n}\n"),
        )
        .expect("write");
    }
    // Slow enough that the kill lands in the middle of the deliveries.
    let target = Receiver::start(SECRET, Behaviour::Slow(Duration::from_millis(300))).await;
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        ("ROSTER_LEASE", "3s".to_string()),
        ("ROSTER_NOTIFY_URLS", target.url.clone()),
        ("ROSTER_NOTIFY_SECRET", SECRET.to_string()),
    ];
    let first = Roster::start(&env, dir.path()).await;
    target
        .wait_until("two deliveries", Duration::from_secs(30), |r| r.len() >= 2)
        .await;
    first.kill_hard();
    let before_restart = target.acknowledged_seqs().len() as i64;
    assert!(
        before_restart < REPOS,
        "the kill came too late to prove anything"
    );

    let second = Roster::start(&env, dir.path()).await;
    target
        .wait_until("every change", Duration::from_secs(60), |r| {
            r.iter().filter(|r| r.acknowledged).map(|r| r.seq).max() == Some(REPOS)
        })
        .await;
    assert_eq!(target.acknowledged_seqs(), (1..=REPOS).collect::<Vec<_>>());
    let mut ids: BTreeMap<i64, String> = BTreeMap::new();
    for r in target.received() {
        assert!(r.signature_ok);
        let id = ids.entry(r.seq).or_insert_with(|| r.delivery.clone());
        assert_eq!(*id, r.delivery, "a resent change keeps its delivery id");
    }
    // The API shows the target caught up (the cursor moves right after
    // the last 2xx).
    let status_url = second.url("/api/v1/notify");
    eventually(
        "the cursor at the last change",
        Duration::from_secs(10),
        || async {
            let status = support::http::get(&status_url).await.ok()?.json();
            (status["items"][0]["cursor"] == REPOS && status["items"][0]["backlog"] == 0)
                .then_some(())
        },
    )
    .await;
    second.terminate();
}
