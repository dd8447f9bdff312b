//! The change feed and history over HTTP: parameters checked with a 400,
//! a long poll answered as soon as a change commits, 410 past retention,
//! an entry's history after its removal.

use crate::support;
use crate::support::registry::{handler, installed_repo};

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use roster::controller::Handler;
use roster::registry::changes::prune::prune_once;
use roster::registry::changes::ChangeWaker;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use roster::web::api_changes::ChangesState;
use roster::web::long_polls::LongPolls;
use roster::web::router::changes as routes;
use support::http::Answer;
use support::router::{fixture, send, Options};

fn found(sha: &str, owner: &str) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", "app", 7),
        file: FileState::Found {
            sha: sha.to_string(),
            bytes: format!("projects:\n  - name: api\n    owner: {owner}\n").into_bytes(),
        },
    }
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

struct Feed {
    main: Router,
    feed: Router,
    long_polls: LongPolls,
    handler: RegistryHandler,
    pool: sqlx::PgPool,
    _stop: roster::shutdown::Stop,
}

async fn feed_fixture() -> Feed {
    feed_fixture_with(LongPolls::default()).await
}

async fn feed_fixture_with(long_polls: LongPolls) -> Feed {
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
    )
    .await;
    let (stop, stop_rx) = roster::shutdown::channel();
    // Listening before any poll: the listener's first connection wakes
    // every waiter once, as any reconnection does.
    let waker = ChangeWaker::start(f.pool.clone());
    waker.listening().await;
    let feed = routes(ChangesState {
        pool: f.pool.clone(),
        waker,
        stop: stop_rx,
        long_polls: long_polls.clone(),
        access: None,
    });
    let handler = handler(&f.pool, f.queue.clone());
    Feed {
        main: f.app,
        feed,
        long_polls,
        handler,
        pool: f.pool,
        _stop: stop,
    }
}

#[tokio::test]
async fn bad_parameters_should_get_a_400_naming_them() {
    let f = feed_fixture().await;
    for (uri, names) in [
        ("/api/v1/changes?after=-1", "after"),
        ("/api/v1/changes?after=abc", "after"),
        ("/api/v1/changes?after=1.5", "after"),
        ("/api/v1/changes?limit=0", "limit"),
        ("/api/v1/changes?limit=1001", "limit"),
        ("/api/v1/changes?wait=61s", "wait"),
        ("/api/v1/changes?wait=forever", "wait"),
    ] {
        let answer = get(&f.feed, uri).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{uri}");
        let error = answer.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(error.starts_with(names), "{uri}: {error}");
    }
    let ok = get(&f.feed, "/api/v1/changes?after=0&limit=5").await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(
        ok.json(),
        serde_json::json!({"items": [], "next_cursor": 0})
    );
}

#[tokio::test]
async fn a_long_poll_should_answer_as_soon_as_a_change_commits() {
    let f = feed_fixture().await;
    let feed = f.feed.clone();
    let started = Instant::now();
    let poll = tokio::spawn(async move { get(&feed, "/api/v1/changes?after=0&wait=30s").await });
    // Give the poll time to find nothing and start waiting; not needed
    // for correctness, only so the commit does wake a waiting request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let committed = Instant::now();
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    let answer = poll.await.expect("poll");
    let after_commit = committed.elapsed();
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["next_cursor"], 1);
    assert_eq!(body["items"][0]["kind"], "created");
    assert_eq!(body["items"][0]["name"], "api");
    assert_eq!(body["items"][0]["after"]["owner"], "team-a");
    // Well under the 30 s it could have waited.
    assert!(after_commit < Duration::from_secs(5), "{after_commit:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_commit_should_wake_a_waiter_by_notification_not_by_polling() {
    let f = feed_fixture().await;
    let waker = ChangeWaker::start(f.pool.clone());
    waker.listening().await;
    let mut waiter = waker.waiter();
    let committed = Instant::now();
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    // The waiter itself never polls: it returns before 30 s only because
    // the commit's NOTIFY reached the listener.
    waiter.wait(Duration::from_secs(30)).await;
    assert!(
        committed.elapsed() < Duration::from_secs(10),
        "{:?}",
        committed.elapsed()
    );
}

/// Waits until `n` polls wait (each found nothing and holds a place).
async fn waiting(f: &Feed, n: usize) {
    let long_polls = f.long_polls.clone();
    support::server::eventually("the polls waiting", Duration::from_secs(20), || {
        let long_polls = long_polls.clone();
        async move { (long_polls.waiting() == n).then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn many_waiters_should_all_wake_on_one_commit_without_polling_meanwhile() {
    const WAITERS: usize = 200;
    let f = feed_fixture_with(LongPolls::new(1000)).await;
    let polls: Vec<_> = (0..WAITERS)
        .map(|_| {
            let feed = f.feed.clone();
            tokio::spawn(async move { get(&feed, "/api/v1/changes?after=0&wait=60s").await })
        })
        .collect();
    waiting(&f, WAITERS).await;
    assert_eq!(f.long_polls.reads(), WAITERS as u64, "one read each");

    // Another poll waits 2.5 s and ends empty: meanwhile the waiters read
    // nothing (before, each read the log once a second).
    let timed = get(&f.feed, "/api/v1/changes?after=0&wait=2500ms").await;
    assert_eq!(timed.json()["items"], serde_json::json!([]));
    assert_eq!(f.long_polls.reads(), WAITERS as u64 + 1);

    // One commit wakes them all, each reading once more.
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    for poll in polls {
        let answer = poll.await.expect("poll");
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.json()["items"][0]["seq"], 1);
    }
    assert_eq!(f.long_polls.reads(), 2 * WAITERS as u64 + 1);
    assert_eq!(f.long_polls.waiting(), 0);
}

#[tokio::test]
async fn a_poll_past_the_cap_should_answer_at_once_with_what_there_is() {
    let f = feed_fixture_with(LongPolls::new(2)).await;
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    let polls: Vec<_> = (0..2)
        .map(|_| {
            let feed = f.feed.clone();
            tokio::spawn(async move { get(&feed, "/api/v1/changes?after=1&wait=60s").await })
        })
        .collect();
    waiting(&f, 2).await;

    // The third asks to wait a minute, and is answered while the two
    // others still wait: with nothing new, or with what there is.
    let third = get(&f.feed, "/api/v1/changes?after=1&wait=60s").await;
    assert_eq!(third.status, StatusCode::OK);
    assert_eq!(
        third.json(),
        serde_json::json!({"items": [], "next_cursor": 1})
    );
    let behind = get(&f.feed, "/api/v1/changes?after=0&wait=60s").await;
    assert_eq!(behind.json()["items"][0]["seq"], 1);
    assert!(polls.iter().all(|p| !p.is_finished()));
    assert_eq!(f.long_polls.waiting(), 2);

    f.handler
        .apply(&RepoId(1), Ok(found("sha2", "team-b")))
        .await
        .expect("reconcile");
    for poll in polls {
        assert_eq!(poll.await.expect("poll").json()["items"][0]["seq"], 2);
    }
    // The places are free again.
    assert_eq!(f.long_polls.waiting(), 0);
}

#[tokio::test]
async fn a_long_poll_with_nothing_new_should_end_empty_after_the_wait() {
    let f = feed_fixture().await;
    let started = Instant::now();
    let answer = get(&f.feed, "/api/v1/changes?after=0&wait=300ms").await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        answer.json(),
        serde_json::json!({"items": [], "next_cursor": 0})
    );
}

#[tokio::test]
async fn a_cursor_older_than_retention_should_get_410_with_the_oldest_kept() {
    let f = feed_fixture().await;
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    f.handler
        .apply(&RepoId(1), Ok(found("sha2", "team-b")))
        .await
        .expect("reconcile");
    prune_once(&f.pool, Duration::ZERO, 1).await.expect("prune");
    let answer = get(&f.feed, "/api/v1/changes?after=0").await;
    assert_eq!(answer.status, StatusCode::GONE);
    assert_eq!(answer.json()["oldest_seq"], 2);
    let answer = get(&f.feed, "/api/v1/changes?after=1").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["items"][0]["seq"], 2);
}

#[tokio::test]
async fn history_should_list_an_entrys_changes_newest_first_also_after_removal() {
    let f = feed_fixture().await;
    f.handler
        .apply(&RepoId(1), Ok(found("sha1", "team-a")))
        .await
        .expect("reconcile");
    f.handler
        .apply(&RepoId(1), Ok(found("sha2", "team-b")))
        .await
        .expect("reconcile");
    let gone = Observed::Removed {
        repo: None,
        reason: "repository deleted".into(),
    };
    f.handler.apply(&RepoId(1), Ok(gone)).await.expect("remove");

    let answer = get(&f.main, "/api/v1/projects/api/history").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let body = answer.json();
    let kinds: Vec<&str> = body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|c| c["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, vec!["removed", "changed", "created"]);
    assert_eq!(body["items"][1]["sha"], "sha2");
    // The entry itself is gone; its history is not.
    let entry = get(&f.main, "/api/v1/projects/api").await;
    assert_eq!(entry.status, StatusCode::NOT_FOUND);

    let page = get(&f.main, "/api/v1/projects/api/history?limit=2")
        .await
        .json();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2));
    let next = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let rest = get(
        &f.main,
        &format!("/api/v1/projects/api/history?before={next}"),
    )
    .await;
    assert_eq!(rest.json()["items"][0]["kind"], "created");

    let unknown = get(&f.main, "/api/v1/projects/nothing/history").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad = get(&f.main, "/api/v1/projects/api/history?before=x").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap_or_default()
        .starts_with("before"));
}

#[tokio::test]
async fn history_should_follow_the_list_conventions_cursor_and_refuse_a_bad_one() {
    let f = feed_fixture().await;
    for k in 0..7 {
        f.handler
            .apply(
                &RepoId(1),
                Ok(found(&format!("sha{k}"), &format!("team-{k}"))),
            )
            .await
            .expect("reconcile");
    }
    // A client that follows `next_cursor` as `?cursor=`, as every list
    // asks, sees each change once and stops.
    let mut seen = Vec::new();
    let mut uri = "/api/v1/projects/api/history?limit=2".to_owned();
    for _ in 0..20 {
        let page = get(&f.main, &uri).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let page = page.json();
        for change in page["items"].as_array().expect("items") {
            seen.push(change["seq"].as_i64().unwrap_or_default());
        }
        match page["next_cursor"].as_str() {
            Some(next) => uri = format!("/api/v1/projects/api/history?limit=2&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7, "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(sorted, seen, "newest first, each once");

    // A bad cursor, or `after` (the feed's word), is a 400 as on the feed.
    for (query, word) in [
        ("cursor=abc", "cursor"),
        ("after=abc", "after"),
        ("after=3", "after"),
    ] {
        let bad = get(&f.main, &format!("/api/v1/projects/api/history?{query}")).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{query}: {}", bad.body);
        let error = bad.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.starts_with(word), "{query}: {error}");
    }
    let feed = get(&f.feed, "/api/v1/changes?after=abc").await;
    assert_eq!(feed.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_dashboard_should_show_an_entrys_diffs_and_the_recently_removed() {
    let f = feed_fixture().await;
    f.handler
        .apply(&RepoId(1), Ok(found("1111111aaaa", "team-a")))
        .await
        .expect("reconcile");
    f.handler
        .apply(&RepoId(1), Ok(found("2222222bbbb", "team-b")))
        .await
        .expect("reconcile");
    let page = get(&f.main, "/projects/api/history").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("<del>team-a</del> → <ins>team-b</ins>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("2222222"));
    assert!(page.body.contains("<code>reconcile</code>"));
    assert!(page.body.contains("Current version"));

    let gone = Observed::Removed {
        repo: None,
        reason: "repository deleted".into(),
    };
    f.handler.apply(&RepoId(1), Ok(gone)).await.expect("remove");
    let page = get(&f.main, "/changes").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("/projects/api/history"), "{}", page.body);
    assert!(page.body.contains("<code>repo_removed</code>"));
    assert!(
        page.body.contains("owner: team-b · path: project.yaml"),
        "{}",
        page.body
    );
    let page = get(&f.main, "/projects/api/history").await;
    assert!(page.body.contains("Removed: no current version"));

    let missing = get(&f.main, "/projects/nothing/history").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}
