//! The dashboard's `/owners` page against a real PostgreSQL: every owner
//! that names nobody current first (unknown, then renamed and deleted
//! teams) with what to do, then each team with its projects; members and
//! secret teams only for a signed-in session.

use crate::owners_api::{fixture, TOKEN};
use crate::support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
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
    for project in [
        "/repos/acme/a#entry-a",
        "/repos/acme/b#entry-b",
        "/repos/acme/c#entry-c",
    ] {
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
    assert!(body[security..].contains("/repos/acme/vault#entry-vault"));
    let members = at(body, "<h3>Members</h3>");
    let alice = at(body, "<strong>@alice</strong>");
    assert!(alice > members && body[alice..].contains("/repos/acme/d#entry-d"));
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
