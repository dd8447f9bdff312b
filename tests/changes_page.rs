//! `GET /changes`: the organisation's change stream, newest first, each
//! change with its kind, entry, repository, cause, commit and field diff;
//! filtered by kind, cause and owner; paged; refreshed like the other pages.
//! And the repository page of a local folder (`dir:`), which has a content
//! digest, not a commit, and no GitHub checks or deliveries.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;

use crate::support;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};
use support::seed::Seed;

const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

async fn fixture() -> Fixture {
    let options = Options {
        api_token: None,
        github_web_url: Some("https://github.com"),
    };
    router::fixture(options, |_, _| {}).await
}

async fn get(app: &Router, uri: &str) -> Answer {
    let request = Request::get(uri)
        .header(header::HOST, "roster.test")
        .body(Body::empty())
        .expect("request");
    send(app, request).await
}

fn projects(list: &[(&str, &str)]) -> String {
    let mut yaml = String::from("projects:\n");
    for (name, owner) in list {
        yaml.push_str(&format!(
            "  - name: {name}\n    owner: {owner}\n    tags: [t]\n"
        ));
    }
    yaml
}

/// The stream's part of the page (the region that refreshes itself).
fn stream(page: &str) -> &str {
    let start = page
        .find("<section id=\"live-stream\" data-live")
        .unwrap_or_else(|| panic!("no live stream region in:\n{page}"));
    let rest = &page[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// The `seq`s of the stream's rows, in page order.
fn seqs(page: &str) -> Vec<i64> {
    stream(page)
        .split("<tr id=\"change-")
        .skip(1)
        .filter_map(|row| row.split('"').next()?.parse().ok())
        .collect()
}

/// Three repositories' worth of changes: created (1–3), an owner changed
/// (4), a repository removed (5, 6).
async fn seed(f: &Fixture) {
    let seed = Seed::new(&f.pool);
    seed.repo(1, "acme", "app")
        .await
        .synced(SHA1, &projects(&[("api", "team-a"), ("web", "team-a")]))
        .await;
    seed.repo(2, "acme", "lib")
        .await
        .synced(SHA1, &projects(&[("lib", "team-b")]))
        .await;
    seed.repo(1, "acme", "app")
        .await
        .synced(SHA2, &projects(&[("api", "team-b"), ("web", "team-a")]))
        .await;
    seed.repo(2, "acme", "lib")
        .await
        .removed("repository deleted")
        .await;
}

#[tokio::test]
async fn changes_page_should_show_the_change_stream_newest_first() {
    let f = fixture().await;
    seed(&f).await;
    let page = get(&f.app, "/changes").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_eq!(seqs(&page.body), [5, 4, 3, 2, 1]);
    let rows = stream(&page.body);
    assert!(rows.contains("<span class=\"outcome outcome-removed\">removed</span>"));
    assert!(rows.contains("<a href=\"/projects/lib/history\">lib</a>"));
    assert!(rows.contains("<a href=\"/repos/acme/lib\">acme/lib</a>"));
    assert!(rows.contains("<code>repo_removed</code>"), "{rows}");
    // The owner change: its commit links to GitHub, its diff is text.
    let changed = rows
        .split("<tr id=\"change-4\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_default();
    assert!(changed.contains("outcome-changed"), "{changed}");
    assert!(changed.contains(&format!("https://github.com/acme/app/commit/{SHA2}")));
    // One line: what moved, from what to what.
    assert!(
        changed.contains("class=\"summary\">owner: team-a → team-b</td>"),
        "{changed}"
    );
    // A created entry: one line of what identifies it, no internal id.
    let created = rows
        .split("<tr id=\"change-1\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_default();
    assert!(
        created.contains("class=\"summary\">owner: team-a · path: project.yaml</td>"),
        "{created}"
    );
    assert!(!created.contains("tags"), "{created}");
    assert!(!rows.contains("owner_team_id"), "{rows}");
    // What the page showed before stays: targets and recent removals.
    assert!(page.body.contains("Notification targets"));
    assert!(page.body.contains("Recently removed"));
}

#[tokio::test]
async fn changes_page_should_filter_by_kind_cause_and_owner() {
    let f = fixture().await;
    seed(&f).await;
    let body = get(&f.app, "/changes?kind=removed").await.body;
    assert_eq!(seqs(&body), [5]);
    assert!(body.contains("<option value=\"removed\" selected>removed</option>"));
    let body = get(&f.app, "/changes?kind=created&owner=team-a").await.body;
    assert_eq!(seqs(&body), [2, 1]);
    // An owner change shows for the team it left and the one it joined.
    let body = get(&f.app, "/changes?owner=team-b").await.body;
    assert_eq!(seqs(&body), [5, 4, 3]);
    let body = get(&f.app, "/changes?cause=repo_removed").await.body;
    assert_eq!(seqs(&body), [5]);
    let body = get(&f.app, "/changes?cause=push").await.body;
    assert_eq!(seqs(&body), Vec::<i64>::new());
    assert!(stream(&body).contains("No change matches."));
    assert!(body.contains("<a href=\"/changes\" class=\"clear\">Clear</a>"));
}

#[tokio::test]
async fn changes_page_should_refuse_an_unknown_filter_value_with_the_known_ones() {
    let f = fixture().await;
    for (query, expected) in [
        ("kind=moved", "expected one of created, changed, removed"),
        ("cause=cron", "expected one of push, listing, resync"),
        ("before=soon", "before:"),
    ] {
        let answer = get(&f.app, &format!("/changes?{query}")).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(answer.body.contains(expected), "{query}: {}", answer.body);
    }
}

#[tokio::test]
async fn changes_page_should_page_through_the_stream_by_seq() {
    let f = fixture().await;
    let names: Vec<(String, &str)> = (0..70).map(|n| (format!("p{n:02}"), "team")).collect();
    let list: Vec<(&str, &str)> = names.iter().map(|(n, o)| (n.as_str(), *o)).collect();
    Seed::new(&f.pool)
        .repo(1, "acme", "mono")
        .await
        .synced(SHA1, &projects(&list))
        .await;
    let first = get(&f.app, "/changes?kind=created").await.body;
    assert_eq!(seqs(&first), (21..=70).rev().collect::<Vec<i64>>());
    let next = stream(&first)
        .split("rel=\"next\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .and_then(|s| s.split('"').next())
        .map(|s| s.replace("&#38;", "&"))
        .unwrap_or_default();
    assert_eq!(next, "/changes?kind=created&before=21");
    let second = get(&f.app, &next).await.body;
    assert_eq!(seqs(&second), (1..=20).rev().collect::<Vec<i64>>());
    assert!(!stream(&second).contains("rel=\"next\""));
    assert!(stream(&second).contains("<a href=\"/changes?kind=created\">← First page</a>"));
}

#[tokio::test]
async fn changes_page_should_say_so_while_nothing_changed() {
    let f = fixture().await;
    let body = get(&f.app, "/changes").await.body;
    assert!(stream(&body).contains("No change yet"), "{body}");
    // The page refreshes its regions like the others do.
    assert!(body.contains("<script src=\"/static/refresh.js"), "{body}");
}

#[tokio::test]
async fn a_local_folder_page_should_show_a_digest_and_no_github_panels() {
    let f = fixture().await;
    let seed = Seed::new(&f.pool);
    let local = roster::source::dir::repo_id("billing").0;
    seed.repo(local, "local", "billing")
        .await
        .invalid(
            "project.yaml:3:1: colour: unknown field\nproject.yaml:4:8: owner: must not be empty",
        )
        .await;
    seed.repo(7, "acme", "app")
        .await
        .synced(SHA1, &projects(&[("api", "team-a")]))
        .await;

    let page = get(&f.app, "/repos/local/billing").await.body;
    assert!(page.contains("<dt>Synced content digest</dt>"), "{page}");
    assert!(!page.contains("Synced commit"));
    assert!(!page.contains("Checks on GitHub"));
    assert!(!page.contains("Recent deliveries"));
    assert!(!page.contains("https://github.com"), "{page}");
    // The timeline gives a multi-line error's first line; the error block
    // above has it whole.
    assert!(
        page.contains(
            "<span class=\"message\"><span class=\"line\">invalid: project.yaml:3:1: colour: unknown field \
             (and 1 more, in full above)</span></span>"
        ),
        "{page}"
    );
    assert_eq!(
        page.matches("project.yaml:4:8: owner: must not be empty")
            .count(),
        1
    );

    let github = get(&f.app, "/repos/acme/app").await.body;
    assert!(github.contains("<dt>Synced commit</dt>"));
    assert!(github.contains("Checks on GitHub"));
    assert!(github.contains("Recent deliveries"));
}
