//! The change log against a repository that pushes a 245 KB project file
//! again and again: every answer that lists changes stays under 1 MiB,
//! following `next_cursor` still yields every change, the log keeps to its
//! size bound (oldest first, a `410` for readers behind, what a
//! notification target still needs kept until it is too far behind), and
//! nothing registered is lost.

use crate::support;
use crate::support::registry::{handler, installed_repo};

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use roster::controller::Handler;
use roster::notify::outbox;
use roster::notify::stall::{needed_after, stall_behind};
use roster::registry::changes::prune::{prune_oversize, stored_bytes};
use roster::registry::changes::{self, ChangeWaker};
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};
use roster::web::api_changes::ChangesState;
use roster::web::router::changes as routes;
use support::http::Answer;
use support::receiver::{Behaviour, Receiver};
use support::router::{fixture, send, Options};

/// The bound of every answer that lists things.
const MAX_ANSWER: usize = 1 << 20;

/// Projects in the big file, and pushes of it.
const PROJECTS: usize = 4;
const PUSHES: usize = 24;

/// A project file of about 245 KB: four projects at every length bound
/// (a 1,000-character description, 50 labels of 63 + 256 characters, 20
/// links of 200 + 2,000), every value different on each push.
fn big_file(push: usize) -> String {
    big_file_named("big-svc", push)
}

/// [`big_file`] with projects named `{prefix}-0` to `{prefix}-3`.
fn big_file_named(prefix: &str, push: usize) -> String {
    let mut yaml = String::from("projects:\n");
    for p in 0..PROJECTS {
        let tag = format!("{push:04}{p}");
        yaml.push_str(&format!("  - name: {prefix}-{p}\n    owner: team-big\n"));
        yaml.push_str(&format!("    description: {}{tag}\n", "d".repeat(995)));
        yaml.push_str("    labels:\n");
        for k in 0..50 {
            let key = format!("label-{k:02}-{}", "k".repeat(54));
            yaml.push_str(&format!("      {key}: {}{tag}\n", "v".repeat(251)));
        }
        yaml.push_str("    links:\n");
        for k in 0..20 {
            let title = format!("{}{tag}{k:02}", "t".repeat(193));
            let url = format!("https://example.com/{}{tag}{k:02}", "u".repeat(1973));
            yaml.push_str(&format!("      - title: {title}\n        url: {url}\n"));
        }
    }
    yaml
}

fn observed(sha: &str, bytes: Vec<u8>) -> Observed {
    observed_in("big", sha, bytes)
}

fn observed_in(repo: &str, sha: &str, bytes: Vec<u8>) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", repo, 7),
        file: FileState::Found {
            sha: sha.to_string(),
            bytes,
        },
    }
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

struct Attack {
    main: Router,
    feed: Router,
    handler: RegistryHandler,
    pool: sqlx::PgPool,
    _stop: roster::shutdown::Stop,
}

/// A server, and the big file pushed `PUSHES` times.
async fn attacked() -> Attack {
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
    )
    .await;
    let (stop, stop_rx) = roster::shutdown::channel();
    let feed = routes(ChangesState {
        pool: f.pool.clone(),
        waker: ChangeWaker::start(f.pool.clone()),
        stop: stop_rx,
        long_polls: roster::web::long_polls::LongPolls::default(),
        access: None,
    });
    let handler = handler(&f.pool, f.queue.clone());
    for push in 0..PUSHES {
        let file = big_file(push);
        assert!(
            (240_000..262_144).contains(&file.len()),
            "{} bytes",
            file.len()
        );
        handler
            .apply(&RepoId(1), Ok(observed(&format!("sha{push}"), file.into())))
            .await
            .expect("reconcile");
    }
    Attack {
        main: f.app,
        feed,
        handler,
        pool: f.pool,
        _stop: stop,
    }
}

/// The big entry as the last push left it.
async fn assert_registered(a: &Attack, push: usize) {
    for p in 0..PROJECTS {
        let entry = get(&a.main, &format!("/api/v1/projects/big-svc-{p}")).await;
        assert_eq!(entry.status, StatusCode::OK, "big-svc-{p}");
        let entry = entry.json();
        assert_eq!(entry["source_sha"], format!("sha{push}"));
        assert_eq!(entry["labels"].as_object().map(|l| l.len()), Some(50));
        assert_eq!(entry["links"].as_array().map(Vec::len), Some(20));
    }
}

#[tokio::test]
async fn the_feed_should_answer_at_most_a_mebibyte_and_paging_should_yield_every_change() {
    let a = attacked().await;
    let expected = (PROJECTS * PUSHES) as i64;
    let (mut after, mut seqs, mut pages) = (0_i64, Vec::new(), 0);
    loop {
        let answer = get(
            &a.feed,
            &format!("/api/v1/changes?after={after}&limit=1000"),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(
            answer.body.len() <= MAX_ANSWER,
            "{} bytes",
            answer.body.len()
        );
        let body = answer.json();
        let items = body["items"].as_array().expect("items").clone();
        if items.is_empty() {
            assert_eq!(body["next_cursor"], after);
            break;
        }
        pages += 1;
        for item in &items {
            seqs.push(item["seq"].as_i64().expect("seq"));
            if item["kind"] == "changed" {
                // `before` is whole again, though stored as the moved fields.
                assert_eq!(
                    item["before"]["labels"].as_object().map(|l| l.len()),
                    Some(50)
                );
                assert_eq!(item["before"]["name"], item["name"]);
                assert_ne!(item["before"]["description"], item["after"]["description"]);
            }
        }
        after = body["next_cursor"].as_i64().expect("next_cursor");
    }
    assert_eq!(seqs, (1..=expected).collect::<Vec<_>>());
    assert!(pages > 5, "the pages were not cut by their size: {pages}");
    assert_registered(&a, PUSHES - 1).await;
}

#[tokio::test]
async fn an_entrys_history_should_be_paged_by_bytes_in_the_api_and_on_the_page() {
    let a = attacked().await;
    let (mut uri, mut seqs) = (
        "/api/v1/projects/big-svc-0/history?limit=1000".to_owned(),
        Vec::new(),
    );
    loop {
        let answer = get(&a.main, &uri).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(
            answer.body.len() <= MAX_ANSWER,
            "{} bytes",
            answer.body.len()
        );
        let body = answer.json();
        seqs.extend(
            body["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|c| c["seq"].as_i64()),
        );
        match body["next_cursor"].as_str() {
            Some(next) => {
                uri = format!("/api/v1/projects/big-svc-0/history?limit=1000&before={next}")
            }
            None => break,
        }
    }
    assert_eq!(seqs.len(), PUSHES);
    assert!(
        seqs.windows(2).all(|w| w[0] > w[1]),
        "newest first: {seqs:?}"
    );

    // The page: each under the bound, "Next page" to the oldest.
    let (mut uri, mut rows, mut pages) = ("/projects/big-svc-0/history".to_owned(), 0, 0);
    loop {
        let page = get(&a.main, &uri).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.len() <= MAX_ANSWER, "{} bytes", page.body.len());
        rows += page.body.matches("<td data-label=\"Seq\">").count();
        pages += 1;
        let next = page
            .body
            .split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .find(|href| href.contains("history?before="))
            .map(|href| href.replace("&amp;", "&"));
        match next {
            Some(next) => uri = next,
            None => break,
        }
    }
    assert_eq!(rows, PUSHES);
    assert!(pages > 1, "the page was not cut by its size");
    let bad = get(&a.main, "/projects/big-svc-0/history?before=soon").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_changed_entry_should_store_after_whole_and_only_the_moved_fields_of_before() {
    let a = attacked().await;
    let (stored, shown): (i64, i64) =
        sqlx::query_as("select sum(bytes)::bigint, sum(shown_bytes)::bigint from changes")
            .fetch_one(&a.pool)
            .await
            .expect("sizes");
    assert_eq!(stored, stored_bytes(&a.pool).await.expect("bytes"));
    // Every value moved on every push, so `before` is nearly a copy; still
    // the log holds about one copy of each version, not two.
    let per_change = stored / (PROJECTS * PUSHES) as i64;
    assert!(per_change < 140_000, "{per_change} bytes a change");
    assert!(shown > stored, "shown {shown}, stored {stored}");

    // A push that moves one field stores about one entry, not two.
    let mut file = big_file(PUSHES - 1);
    file = file.replacen("owner: team-big", "owner: team-small", 1);
    a.handler
        .apply(&RepoId(1), Ok(observed("sha-owner", file.into())))
        .await
        .expect("reconcile");
    let (before, after): (i64, i64) = sqlx::query_as(
        "select octet_length(before::text)::bigint, octet_length(after::text)::bigint
         from changes order by seq desc limit 1",
    )
    .fetch_one(&a.pool)
    .await
    .expect("last change");
    assert!(before < 100, "before stored as {before} bytes");
    assert!(after > 60_000, "after stored as {after} bytes");
    let last = changes::changes_after(&a.pool, (PROJECTS * PUSHES) as i64, 10)
        .await
        .expect("feed");
    assert_eq!(
        last.items[0]
            .before
            .as_ref()
            .map(|b| b.fields.owner.as_str()),
        Some("team-big")
    );
    assert_eq!(
        last.items[0].before.as_ref().map(|b| &b.fields.labels),
        last.items[0].after.as_ref().map(|b| &b.fields.labels)
    );
}

#[tokio::test]
async fn the_log_should_keep_to_its_size_bound_oldest_first_with_a_410_for_readers_behind() {
    let a = attacked().await;
    let before = stored_bytes(&a.pool).await.expect("bytes");
    let bound = (before / 3) as u64;
    let removed = prune_oversize(&a.pool, bound, None).await.expect("prune");
    assert!(removed > 0);
    let after = stored_bytes(&a.pool).await.expect("bytes");
    assert!(after as u64 <= bound, "{after} > {bound}");
    let oldest = changes::oldest_kept(&a.pool).await.expect("oldest");
    assert_eq!(oldest, removed as i64 + 1, "only the oldest went");

    let gone = get(&a.feed, "/api/v1/changes?after=0").await;
    assert_eq!(gone.status, StatusCode::GONE);
    assert_eq!(gone.json()["oldest_seq"], oldest);
    let kept = get(&a.feed, &format!("/api/v1/changes?after={}", oldest - 1)).await;
    assert_eq!(kept.status, StatusCode::OK);
    assert_eq!(kept.json()["items"][0]["seq"], oldest);
    assert_registered(&a, PUSHES - 1).await;
}

#[tokio::test]
async fn a_file_over_a_length_bound_should_be_invalid_and_keep_the_entries() {
    let a = attacked().await;
    let file = big_file(PUSHES).replacen(&"v".repeat(251), &"v".repeat(400), 1);
    a.handler
        .apply(&RepoId(1), Ok(observed("sha-long", file.into())))
        .await
        .expect("reconcile");
    let repo = get(&a.main, "/api/v1/repos/acme/big").await.json();
    assert_eq!(repo["status"], "invalid");
    let error = repo["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("projects[0].labels.label-00-")
            && error.contains("must be at most 256 characters, found 405"),
        "{error}"
    );
    assert_registered(&a, PUSHES - 1).await;
}

fn delivery(
    pool: &sqlx::PgPool,
    metrics: roster::notify::NotifyMetrics,
) -> std::sync::Arc<roster::notify::Delivery> {
    std::sync::Arc::new(roster::notify::Delivery {
        pool: pool.clone(),
        transport: roster::notify::transport(Duration::from_millis(500)).expect("client"),
        secret: secrecy::SecretString::from("notify-secret"),
        owner: "replica-a".to_owned(),
        waker: ChangeWaker::start(pool.clone()),
        metrics,
        timeout: Duration::from_millis(500),
        lease: Duration::from_secs(5),
        backoff: roster::controller::Backoff {
            base: Duration::from_millis(50),
            cap: Duration::from_millis(400),
            jitter: 0.2,
        },
        encode: roster::web::json::change_body,
    })
}

#[tokio::test]
async fn a_target_should_keep_its_backlog_until_it_is_more_than_the_bound_behind_then_get_one_gap()
{
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: None,
        },
        |_, _| {},
    )
    .await;
    let receiver = Receiver::start("notify-secret", Behaviour::Ok).await;
    outbox::register(&f.pool, &receiver.url)
        .await
        .expect("register");
    let handler = handler(&f.pool, f.queue.clone());
    for push in 0..8 {
        handler
            .apply(
                &RepoId(1),
                Ok(observed(&format!("sha{push}"), big_file(push).into())),
            )
            .await
            .expect("reconcile");
    }
    let head = changes::head(&f.pool).await.expect("head");
    let total = stored_bytes(&f.pool).await.expect("bytes") as u64;
    // The target received the first quarter.
    let received = head / 4;
    sqlx::query("update notify_targets set cursor = $1")
        .bind(received)
        .execute(&f.pool)
        .await
        .expect("cursor");

    // Over the bound, but the target is within it: only what it received goes.
    let bound = total / 2;
    assert!(stall_behind(&f.pool, total)
        .await
        .expect("stall")
        .is_empty());
    prune_oversize(&f.pool, bound, needed(&f.pool).await)
        .await
        .expect("prune");
    assert_eq!(
        changes::oldest_kept(&f.pool).await.expect("oldest"),
        received + 1
    );
    assert!(stored_bytes(&f.pool).await.expect("bytes") as u64 > bound);

    // More than the bound behind: stalled, its backlog dropped, the log bounded.
    let stalled = stall_behind(&f.pool, bound).await.expect("stall");
    assert_eq!(stalled.len(), 1);
    assert_eq!(
        (stalled[0].first_seq, stalled[0].last_seq),
        (received + 1, head)
    );
    prune_oversize(&f.pool, bound, needed(&f.pool).await)
        .await
        .expect("prune");
    assert!(stored_bytes(&f.pool).await.expect("bytes") as u64 <= bound);
    let status = outbox::status(&f.pool).await.expect("status");
    assert!(status[0].stalled && status[0].backlog == 0, "{status:?}");
    let page = get(&f.app, "/changes").await;
    assert!(page.body.contains(">stalled</span>"), "{}", page.body);

    // One `gap` notification, then the changes from the newest on.
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics =
        roster::notify::NotifyMetrics::register(registry.sub_registry_with_prefix("roster"));
    let (_stop, stop_rx) = roster::shutdown::channel();
    tokio::spawn(delivery(&f.pool, metrics).run(receiver.url.clone(), stop_rx));
    handler
        .apply(&RepoId(1), Ok(observed("sha-next", big_file(99).into())))
        .await
        .expect("reconcile");
    receiver
        .wait_until(
            "the gap and the next changes",
            Duration::from_secs(20),
            |r| r.iter().filter(|r| r.acknowledged).count() > PROJECTS,
        )
        .await;
    let got = receiver.received();
    assert_eq!(got[0].body["kind"], "gap");
    assert_eq!(got[0].body["first_seq"], received + 1);
    assert_eq!(got[0].body["last_seq"], head);
    assert_eq!(got.iter().filter(|r| r.body["kind"] == "gap").count(), 1);
    let seqs: Vec<i64> = got[1..].iter().map(|r| r.seq).collect();
    assert_eq!(
        seqs,
        ((head + 1)..=(head + PROJECTS as i64)).collect::<Vec<_>>()
    );
    let status = outbox::status(&f.pool).await.expect("status");
    assert!(!status[0].stalled, "{status:?}");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    let label = roster::notify::redact(&receiver.url);
    assert!(
        text.contains(&format!("roster_notify_stalled{{target=\"{label}\"}} 0")),
        "{text}"
    );
}

#[tokio::test]
async fn the_registry_should_be_listed_at_most_a_mebibyte_a_page_in_the_api_and_on_the_page() {
    let a = attacked().await;
    for repo in 2..=6 {
        let file = big_file_named(&format!("svc{repo}"), 0);
        a.handler
            .apply(
                &RepoId(repo),
                Ok(observed_in(&format!("big{repo}"), "sha0", file.into())),
            )
            .await
            .expect("reconcile");
    }
    let expected = PROJECTS * 6;
    let (mut uri, mut names, mut pages) = ("/api/v1/projects?limit=1000".to_owned(), Vec::new(), 0);
    loop {
        let answer = get(&a.main, &uri).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(
            answer.body.len() <= MAX_ANSWER,
            "{} bytes",
            answer.body.len()
        );
        let body = answer.json();
        names.extend(
            body["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|e| e["name"].as_str().unwrap_or_default().to_owned()),
        );
        pages += 1;
        match body["next_cursor"].as_str() {
            Some(next) => uri = format!("/api/v1/projects?limit=1000&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(names.len(), expected, "{names:?}");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    assert!(pages > 1, "not cut by size");

    let (mut uri, mut rows) = ("/projects".to_owned(), 0);
    loop {
        let page = get(&a.main, &uri).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.len() <= MAX_ANSWER, "{} bytes", page.body.len());
        rows += page.body.matches("<td data-label=\"Name\">").count();
        let next = page
            .body
            .split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .find(|href| href.contains("cursor="))
            .map(|href| href.replace("&amp;", "&"));
        match next {
            Some(next) => uri = next,
            None => break,
        }
    }
    assert_eq!(rows, expected);
}

async fn needed(pool: &sqlx::PgPool) -> Option<i64> {
    needed_after(pool).await.expect("targets")
}
