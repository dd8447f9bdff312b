//! A repository's detail (`GET /api/v1/repos/{owner}/{name}`) stays under
//! the byte bound of every answer that lists things, however many large
//! entries the repository holds (several project files allow up to 1,000),
//! and `entries_next_cursor` leads to every one of them; its page shows
//! what fits and links to the rest.

use crate::support;

use axum::body::Body;
use axum::http::Request;
use support::router::{fixture, send, Options};

/// The bound of every answer that lists things.
const MAX_ANSWER: usize = 1 << 20;

/// Entries in the repository, each with 50 labels at the length bounds
/// (about 16 KB of JSON each: 4.8 MB in all).
const ENTRIES: usize = 300;

#[tokio::test]
async fn a_repository_of_many_large_entries_should_page_its_entries_by_bytes() {
    let f = fixture(
        Options {
            api_token: None,
            github_web_url: Some("https://github.com"),
        },
        |_, _| {},
    )
    .await;
    sqlx::query(
        "insert into repositories (id, owner, name, status, synced_sha, last_synced_at)
         values (1, 'acme', 'mono', 'synced', 'abc123', now())",
    )
    .execute(&f.pool)
    .await
    .expect("repository");
    let labels: serde_json::Value = (0..50)
        .map(|k| {
            (
                format!("label-{k:02}-{}", "k".repeat(54)),
                serde_json::Value::String("v".repeat(256)),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    sqlx::query(
        "insert into entries (name, repo_id, owner, labels, source_sha)
         select 'svc-' || lpad(n::text, 4, '0'), 1, 'team-a', $1, 'abc123'
         from generate_series(1, $2) as n",
    )
    .bind(&labels)
    .bind(i32::try_from(ENTRIES).expect("fits"))
    .execute(&f.pool)
    .await
    .expect("entries");

    let mut seen = Vec::new();
    let mut pages = 0;
    let mut after: Option<String> = None;
    loop {
        let uri = match &after {
            Some(name) => format!("/api/v1/repos/acme/mono?entries_after={name}"),
            None => "/api/v1/repos/acme/mono".to_owned(),
        };
        let answer = send(
            &f.app,
            Request::get(&uri).body(Body::empty()).expect("request"),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(
            answer.body.len() <= MAX_ANSWER,
            "{uri}: {} bytes",
            answer.body.len()
        );
        let page = answer.json();
        let names: Vec<String> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(!names.is_empty(), "a page holds at least one entry");
        seen.extend(names);
        pages += 1;
        match page["entries_next_cursor"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < ENTRIES, "the cursor does not move");
    }
    println!("{ENTRIES} entries in {pages} answers");
    assert!(pages > 1, "4.8 MB of entries cannot fit in one answer");
    let expected: Vec<String> = (1..=ENTRIES).map(|n| format!("svc-{n:04}")).collect();
    assert_eq!(seen, expected, "every entry once, in order");

    // The repository's page shows what fits and links to the rest.
    let page = send(
        &f.app,
        Request::get("/repos/acme/mono")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(page.body.len() <= MAX_ANSWER, "{} bytes", page.body.len());
    let shown = page.body.matches("class=\"entry\"").count();
    assert!(shown > 0 && shown < ENTRIES, "{shown} entries shown");
    assert!(
        page.body.contains(&format!(
            "{} more entries do not fit on this page",
            ENTRIES - shown
        )),
        "the page says how many are left out"
    );
    assert!(page.body.contains(&format!(
        "/api/v1/repos/acme/mono?entries_after=svc-{shown:04}"
    )));
}
