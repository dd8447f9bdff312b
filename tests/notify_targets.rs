//! Notification targets as the real server shows them. A URL that keeps its
//! secret in the path (as Slack, Zapier and Discord webhooks do) appears as
//! scheme, host and port only: in `GET /api/v1/notify`, on the Changes
//! page, in `roster_notify_backlog{target}` and in the log. A target no
//! longer in `ROSTER_NOTIFY_URLS` is no longer listed, and its backlog is
//! dropped, from the next start.

use crate::support;
use crate::support::registry::{handler, installed_repo, queue};

use std::time::Duration;

use roster::controller::Handler;
use roster::notify::outbox;
use roster::source::{FileState, Observed, RepoId};
use support::http::get;
use support::receiver::{Behaviour, Receiver};
use support::server::{eventually, free_port, Roster};

const LIMIT: Duration = Duration::from_secs(30);

fn found(name: &str) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", name, 7),
        file: FileState::Found {
            sha: "a".repeat(40),
            bytes: format!("projects:\n  - name: {name}\n    owner: team-a\n").into_bytes(),
        },
    }
}

#[tokio::test]
async fn a_target_should_show_only_scheme_host_and_port_and_a_removed_one_should_go() {
    let (pool, db_url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let token = format!("{:032x}", fastrand::u128(..));
    let old_token = format!("{:032x}", fastrand::u128(..));

    // A target of an earlier configuration, with changes it never received.
    let removed = format!(
        "http://127.0.0.1:{}/services/T0OLD/B0OLD/{old_token}",
        free_port()
    );
    outbox::register(&pool, &removed).await.expect("register");
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    handler
        .apply(&RepoId(900), Ok(found("before-start")))
        .await
        .expect("reconcile");
    let before = outbox::status(&pool).await.expect("status");
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].backlog, 1);

    // The configured target answers on loopback, but not on this path: each
    // delivery fails with a 404, so the log has lines naming it.
    let receiver = Receiver::start("secret", Behaviour::Ok).await;
    let origin = receiver.url.trim_end_matches("/hook").to_owned();
    let target = format!("{origin}/services/T0NEW/B0NEW/{token}");
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("org").join("svc");
    std::fs::create_dir_all(&repo).expect("mkdir");
    std::fs::write(
        repo.join("project.yaml"),
        "projects:\n  - name: svc\n    owner: team-a\n",
    )
    .expect("project file");
    let env = [
        ("DATABASE_URL", db_url),
        (
            "ROSTER_SOURCE",
            format!("dir:{}", dir.path().join("org").display()),
        ),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        ("ROSTER_NOTIFY_URLS", target.clone()),
        ("ROSTER_NOTIFY_SECRET", "secret".to_string()),
    ];
    let roster = Roster::start(&env, dir.path()).await;

    // The new entry's change was tried and failed at least once.
    let listed = eventually("a failed delivery", LIMIT, || async {
        let answer = get(&roster.url("/api/v1/notify")).await.ok()?;
        let body = answer.json();
        let tried = body["items"][0]["attempts"].as_i64().unwrap_or(0) > 0;
        tried.then_some(answer)
    })
    .await;
    let items = listed.json()["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        items.len(),
        1,
        "only the configured target: {}",
        listed.body
    );
    assert_eq!(items[0]["target"], origin.as_str());
    assert!(items[0]["backlog"].as_i64().unwrap_or(0) >= 1);
    let left: i64 = sqlx::query_scalar("select count(*) from notify_targets where url = $1")
        .bind(&removed)
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(left, 0, "the removed target and its backlog are gone");

    let page = get(&roster.url("/changes")).await.expect("changes page");
    assert!(page.body.contains(&format!("<code>{origin}</code>")));
    let metrics = get(&roster.url("/metrics")).await.expect("metrics");
    assert!(
        metrics
            .body
            .contains(&format!("roster_notify_backlog{{target=\"{origin}\"}}")),
        "{}",
        metrics.body
    );
    let logs = eventually("the failure in the log", LIMIT, || async {
        let logs = roster.logs();
        logs.lines()
            .any(|l| l.contains("notify: delivery failed") && l.contains(&origin))
            .then_some(logs)
    })
    .await;

    for (place, text) in [
        ("GET /api/v1/notify", &listed.body),
        ("the Changes page", &page.body),
        ("/metrics", &metrics.body),
        ("the log", &logs),
    ] {
        for secret in [&token, &old_token, &"T0NEW".to_owned(), &"T0OLD".to_owned()] {
            assert!(!text.contains(secret.as_str()), "{place} shows {secret}");
        }
    }
}
