//! The dashboard's `/owners` page against a real PostgreSQL: every owner
//! that names nobody current first (unknown, then renamed and deleted
//! teams) with what to do, then each team with its projects; members and
//! secret teams only for a signed-in session.

use crate::owners_api::{fixture, TOKEN};
use crate::support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::controller::Handler;
use roster::source::{FileState, Observed, RepoId};
use support::http::Answer;
use support::router::send;
use support::seed::Seed;

const HOST: &str = "roster.test";

async fn get_as(app: &Router, uri: &str, cookie: Option<&str>) -> Answer {
    let mut request = Request::get(uri).header(header::HOST, HOST);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(app, request.body(Body::empty()).expect("request")).await
}

/// Signs in and returns the `Cookie` header value of the session.
async fn sign_in(app: &Router) -> String {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/signin")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("token={TOKEN}&next=%2F")))
        .expect("request");
    let answer = send(app, request).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer.header(header::SET_COOKIE);
    set.split(';').next().unwrap_or_default().to_owned()
}

/// Where `needle` starts in `page`; fails the test when it is absent.
fn at(page: &str, needle: &str) -> usize {
    page.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not on the page:\n{page}"))
}

#[tokio::test]
async fn dangling_owners_should_come_first_then_teams_with_their_projects() {
    let f = fixture().await;
    let seed = Seed::new(&f.pool);
    seed.repo(6, "acme", "vault")
        .await
        .synced("abc", "name: vault\nowner: security\n")
        .await;
    let page = get_as(&f.app, "/owners", None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    assert!(
        body.contains("<a href=\"/owners\">Owners</a>"),
        "linked from the navigation"
    );
    let dangling = at(body, "Owners that name nobody current");
    let renamed = at(
        body,
        "&#34;pay&#34; was renamed to &#34;payments&#34;; update the file",
    );
    let teams = at(body, "<h3>Teams</h3>");
    assert!(dangling < renamed && renamed < teams, "{body}");
    // An owner naming nobody reads like a member: only signed in.
    assert!(!body.contains("&#34;nobody&#34;"), "{body}");
    // Each team with its projects, an old slug counting for the team.
    let payments = at(body, "<strong>payments</strong>");
    assert!(payments > teams);
    assert!(body[payments..].contains("renamed from <code>pay</code>"));
    for project in ["/projects/a\"", "/projects/b\"", "/projects/c\""] {
        assert!(body[teams..].contains(project), "{project} under its team");
    }
    // Private data stays private.
    assert!(!body.contains("security"), "a secret team is hidden");
    assert!(!body.contains("alice"), "members are hidden");
    assert!(!body.contains("<h3>Members</h3>"));
    assert!(body.contains("members and secret teams show to a signed-in operator"));

    let cookie = sign_in(&f.app).await;
    let page = get_as(&f.app, "/owners", Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    let unknown = at(body, "no team or member &#34;nobody&#34; in acme");
    let renamed = at(body, "&#34;pay&#34; was renamed to &#34;payments&#34;");
    assert!(unknown < renamed, "unknown owners first: {body}");
    let security = at(body, "<strong>security</strong>");
    assert!(body[security..].contains("/projects/vault"));
    let members = at(body, "<h3>Members</h3>");
    let alice = at(body, "<strong>@alice</strong>");
    assert!(alice > members && body[alice..].contains("/projects/d"));
}

#[tokio::test]
async fn an_organisation_whose_teams_github_refuses_should_say_owners_are_unchecked() {
    let f = fixture().await;
    let db = roster::directory::DirectoryDb::new(f.pool.clone());
    assert!(db
        .turn_off(50, "Resource not accessible by integration")
        .await
        .unwrap());
    let page = get_as(&f.app, "/owners", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("Owners of acme are not checked"),
        "{}",
        page.body
    );
    assert!(page.body.contains("members: read"));
    // Nothing is dangling while owners are not checked.
    assert!(!page.body.contains("Owners that name nobody current"));
}

#[tokio::test]
async fn a_repository_whose_owner_is_flagged_should_say_so_on_the_overview_and_in_the_api() {
    let f = fixture().await;
    // Reconciled with owners checked, as `serve` does under `warn`: `pay`
    // is a renamed team, `nobody` nobody; a team is fine.
    let handler = support::registry::handler(&f.pool, support::registry::queue(&f.pool))
        .with_owners(roster::directory::OwnersMode::Warn);
    for (id, name, owner) in [(11, "f", "nobody"), (12, "g", "platform"), (13, "h", "pay")] {
        let repo = support::registry::installed_repo("acme", name, 5);
        roster::registry::ensure_known(&f.pool, &[(RepoId(id), repo.clone())])
            .await
            .expect("known");
        let file = FileState::Found {
            sha: "def".into(),
            bytes: format!("name: {name}\nowner: \"{owner}\"\n").into_bytes(),
        };
        let outcome = handler
            .apply(&RepoId(id), Ok(Observed::Present { repo, file }))
            .await
            .expect("applied");
        assert_eq!(outcome, "synced");
    }
    let list = get_as(&f.app, "/api/v1/repos?q=acme/", None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    let list: serde_json::Value = serde_json::from_str(&list.body).expect("JSON");
    let warnings: Vec<(String, i64)> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|r| {
            ["acme/f", "acme/g", "acme/h"].contains(&r["full_name"].as_str().unwrap_or_default())
        })
        .map(|r| {
            (
                r["full_name"].as_str().unwrap_or_default().to_owned(),
                r["warnings"].as_i64().expect("warnings is a number"),
            )
        })
        .collect();
    let expected: Vec<(String, i64)> = [("acme/f", 1), ("acme/g", 0), ("acme/h", 1)]
        .map(|(n, w)| (n.to_owned(), w))
        .into();
    assert_eq!(warnings, expected);
    let detail = get_as(&f.app, "/api/v1/repos/acme/f", None).await;
    let detail: serde_json::Value = serde_json::from_str(&detail.body).expect("JSON");
    assert_eq!(detail["status"], "synced");
    assert_eq!(detail["warnings"], 1);

    let overview = get_as(&f.app, "/", None).await;
    assert_eq!(overview.status, StatusCode::OK);
    let body = &overview.body;
    let row = |name: &str| {
        let start = at(body, &format!(">acme/{name}</a>"));
        let row_start = body[..start].rfind("<tr>").unwrap_or(0);
        let row_end = start + body[start..].find("</tr>").unwrap_or(0);
        body[row_start..row_end].to_owned()
    };
    assert!(row("f").contains("1 to fix"), "{}", row("f"));
    assert!(
        row("f").contains("href=\"/repos/acme/f#entries\""),
        "{}",
        row("f")
    );
    assert!(!row("g").contains("to fix"), "{}", row("g"));
}

#[tokio::test]
async fn control_characters_in_a_teams_name_should_be_escaped_on_the_page() {
    let f = fixture().await;
    let db = roster::directory::DirectoryDb::new(f.pool.clone());
    let started = db.read_started().await.expect("started");
    let team = roster::directory::Team {
        id: 4,
        slug: "bell".to_owned(),
        name: "ring\u{7}\u{1b}[31mred".to_owned(),
        parent_id: None,
        secret: false,
    };
    db.put(50, roster::directory::Rows::Teams(&[team]), started)
        .await
        .expect("teams");
    let seed = Seed::new(&f.pool);
    seed.repo(7, "acme", "bells")
        .await
        .synced("abc", "name: bells\nowner: bell\n")
        .await;
    let page = get_as(&f.app, "/owners", None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        !page.body.contains(['\u{7}', '\u{1b}']),
        "raw control characters on the page"
    );
    assert!(
        page.body.contains("ring\\u{0007}\\u{001B}[31mred"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn the_idle_counts_should_read_as_sentences_and_go_when_zero() {
    let options = support::router::Options {
        api_token: Some(TOKEN),
        github_web_url: None,
    };
    let f = support::router::fixture(options, |_, _| {}).await;
    support::example_org::load(&f.pool, f.queue.clone()).await;
    let cookie = sign_in(&f.app).await;
    for cookie in [None, Some(cookie.as_str())] {
        let page = get_as(&f.app, "/owners", cookie).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        for wrong in [
            "0 other teams",
            "0 other members",
            "1 other teams",
            "1 other members",
        ] {
            assert!(
                !page.body.contains(wrong),
                "{wrong:?} on the page:\n{}",
                page.body
            );
        }
    }
}
