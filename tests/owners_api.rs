//! `GET /api/v1/owners`: teams with the entries that name them (an old
//! slug counting for the team it now names), members and secret teams only
//! for the API token, a wrong token refused, pages bounded with a cursor.

use crate::support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::directory::db::Account;
use roster::directory::{DirectoryDb, Member, Part, Rows, Team};
use roster::source::InstallationId;
use serde_json::Value;
use support::http::Answer;
use support::router::{self, send, Options};
use support::seed::Seed;

pub(crate) const TOKEN: &str = "owners-t0ken";

async fn get(app: &Router, uri: &str, authorization: Option<&str>) -> Answer {
    let mut request = Request::builder().method(Method::GET).uri(uri);
    if let Some(value) = authorization {
        request = request.header(header::AUTHORIZATION, value);
    }
    send(app, request.body(Body::empty()).expect("request")).await
}

fn team(id: i64, slug: &str, secret: bool) -> Team {
    Team {
        id,
        slug: slug.to_owned(),
        name: format!("The {slug} team"),
        parent_id: None,
        secret,
    }
}

fn names(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            format!(
                "{}:{}={}",
                o["kind"].as_str().unwrap_or(""),
                o["name"].as_str().unwrap_or(""),
                o["entries"]
            )
        })
        .collect()
}

/// acme (org 50): teams payments (renamed from `pay`), platform, a secret
/// `security`; member alice. Entries: two owned by `pay`, one by
/// `@acme/platform`, one by `@alice`, one by nobody.
pub(crate) async fn fixture() -> support::router::Fixture {
    let options = Options {
        api_token: Some(TOKEN),
        github_web_url: Some("https://github.com"),
    };
    let f = router::fixture(options, |_, _| {}).await;
    let db = DirectoryDb::new(f.pool.clone());
    db.ensure_account(&Account {
        org_id: 50,
        login: "acme".into(),
        installation_id: Some(InstallationId(5)),
        personal: false,
    })
    .await
    .unwrap();
    let started = db.read_started().await.unwrap();
    db.put(50, Rows::Teams(&[team(1, "pay", false)]), started)
        .await
        .unwrap();
    let started = db.read_started().await.unwrap();
    db.put(
        50,
        Rows::Teams(&[
            team(1, "payments", false),
            team(2, "platform", false),
            team(3, "security", true),
        ]),
        started,
    )
    .await
    .unwrap();
    db.finish(50, Part::Teams, started).await.unwrap();
    db.put(
        50,
        Rows::Members(&[Member {
            id: 9,
            login: "alice".into(),
        }]),
        started,
    )
    .await
    .unwrap();
    db.finish(50, Part::Members, started).await.unwrap();
    let seed = Seed::new(&f.pool);
    for (id, name, owner) in [
        (1, "a", "pay"),
        (2, "b", "PAY"),
        (3, "c", "@acme/platform"),
        (4, "d", "@alice"),
        (5, "e", "nobody"),
    ] {
        let yaml = format!("name: {name}\nowner: \"{owner}\"\n");
        seed.repo(id, "acme", name).await.synced("abc", &yaml).await;
    }
    f
}

#[tokio::test]
async fn owners_should_count_entries_through_the_directory_and_hide_private_ones() {
    let f = fixture().await;
    let public = get(&f.app, "/api/v1/owners", None).await;
    assert_eq!(public.status, StatusCode::OK, "{}", public.body);
    let page: Value = serde_json::from_str(&public.body).unwrap();
    assert_eq!(names(&page), ["team:payments=2", "team:platform=1"]);
    assert_eq!(page["accounts"][0]["login"], "acme");
    assert_eq!(page["accounts"][0]["owners_checked"], true);
    assert_eq!(page["next_cursor"], Value::Null);

    let bearer = format!("Bearer {TOKEN}");
    let full = get(&f.app, "/api/v1/owners", Some(&bearer)).await;
    let page: Value = serde_json::from_str(&full.body).unwrap();
    assert_eq!(
        names(&page),
        [
            "team:payments=2",
            "team:platform=1",
            "team:security=0",
            "member:alice=1"
        ]
    );

    let wrong = get(&f.app, "/api/v1/owners", Some("Bearer nope")).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(!wrong.body.contains("alice"));
}

#[tokio::test]
async fn owners_should_page_with_a_cursor_and_refuse_a_bad_one() {
    let f = fixture().await;
    let bearer = format!("Bearer {TOKEN}");
    let mut seen = Vec::new();
    let mut uri = "/api/v1/owners?limit=1".to_owned();
    for _ in 0..10 {
        let page: Value =
            serde_json::from_str(&get(&f.app, &uri, Some(&bearer)).await.body).unwrap();
        seen.extend(names(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => uri = format!("/api/v1/owners?limit=1&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [
            "team:payments=2",
            "team:platform=1",
            "team:security=0",
            "member:alice=1"
        ]
    );
    let bad = get(&f.app, "/api/v1/owners?cursor=garbage", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let bad = get(&f.app, "/api/v1/owners?limit=0", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
}

#[tokio::test]
async fn a_page_of_ten_thousand_teams_should_stay_under_one_mebibyte() {
    let f = fixture().await;
    let db = DirectoryDb::new(f.pool.clone());
    // Long slugs: 1,000 of them make more than 1 MiB, so the byte bound
    // ends pages before the limit does.
    let long = "x".repeat(500);
    let teams: Vec<Team> = (0..10_000)
        .map(|i| team(1_000 + i, &format!("team-{i:05}-{long}"), false))
        .collect();
    let started = db.read_started().await.unwrap();
    for chunk in teams.chunks(1000) {
        db.put(50, Rows::Teams(chunk), started).await.unwrap();
    }
    let mut total = 0;
    let mut uri = "/api/v1/owners?limit=1000".to_owned();
    let mut pages = 0;
    loop {
        let answer = get(&f.app, &uri, None).await;
        assert!(
            answer.body.len() <= 1024 * 1024,
            "{} bytes",
            answer.body.len()
        );
        let page: Value = serde_json::from_str(&answer.body).unwrap();
        total += page["items"].as_array().map_or(0, Vec::len);
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(cursor) => uri = format!("/api/v1/owners?limit=1000&cursor={cursor}"),
            None => break,
        }
        assert!(pages < 100, "the pages do not end");
    }
    assert_eq!(total, 10_002, "every visible team once");
    assert!(pages > 11, "{pages} pages: the byte bound never ended one");
}

fn dangling(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            format!(
                "{}:{}:{}={}",
                o["status"].as_str().unwrap_or(""),
                o["owner"].as_str().unwrap_or(""),
                o["renamed_to"].as_str().unwrap_or("-"),
                o["entries"]
            )
        })
        .collect()
}

#[tokio::test]
async fn owners_by_status_should_list_the_owners_that_name_nobody_current() {
    let f = fixture().await;
    let ask = |uri: &'static str| {
        let app = f.app.clone();
        async move {
            let answer = get(&app, uri, None).await;
            assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.body);
            serde_json::from_str::<Value>(&answer.body).expect("json")
        }
    };
    let renamed = ask("/api/v1/owners?status=renamed").await;
    assert_eq!(
        dangling(&renamed),
        ["renamed:PAY:payments=1", "renamed:pay:payments=1"]
    );
    // An owner naming nobody reads like a member: only with the token.
    let unknown = ask("/api/v1/owners?status=unknown").await;
    assert_eq!(dangling(&unknown).len(), 0);
    let bearer = format!("Bearer {TOKEN}");
    let answer = get(&f.app, "/api/v1/owners?status=unknown", Some(&bearer)).await;
    let unknown: Value = serde_json::from_str(&answer.body).expect("json");
    assert_eq!(dangling(&unknown), ["unknown:nobody:-=1"]);
    assert_eq!(
        dangling(&ask("/api/v1/owners?status=deleted").await).len(),
        0
    );

    // Paged with a cursor like the teams.
    let first = ask("/api/v1/owners?status=renamed&limit=1").await;
    assert_eq!(dangling(&first), ["renamed:PAY:payments=1"]);
    let cursor = first["next_cursor"].as_str().expect("a cursor").to_owned();
    let uri = format!("/api/v1/owners?status=renamed&limit=1&cursor={cursor}");
    let second: Value = serde_json::from_str(&get(&f.app, &uri, None).await.body).expect("json");
    assert_eq!(dangling(&second), ["renamed:pay:payments=1"]);
    assert_eq!(second["next_cursor"], Value::Null);

    // A status it does not know: a clear 400, and nothing registered moved.
    let bad = get(&f.app, "/api/v1/owners?status=gone", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body
            .contains("status: must be one of unknown, renamed, deleted"),
        "{}",
        bad.body
    );
    let entries: i64 = sqlx::query_scalar("select count(*) from entries")
        .fetch_one(&f.pool)
        .await
        .expect("count");
    assert_eq!(entries, 5);
}
