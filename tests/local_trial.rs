//! The README's first command as a newcomer meets it: no setting but the
//! source, so the server makes a token of its own, prints the link that
//! signs in with it, and a browser that follows the link sees every owner
//! and can resync. The token is kept in the data folder across restarts.

use crate::support;

use std::path::Path;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use support::http::{get, send};
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);

async fn start(data: &Path, log_dir: &Path, url: &str) -> Roster {
    let org = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    let env = [
        ("DATABASE_URL", url.to_owned()),
        ("ROSTER_DATA_DIR", data.display().to_string()),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        (
            "ROSTER_PROJECT_FILES",
            "project.yaml,services/*/project.yaml".to_string(),
        ),
    ];
    Roster::start(&env, log_dir).await
}

/// The sign-in link the log printed, as a path on the server.
fn printed_link(logs: &str) -> String {
    let start = logs
        .find("/signin?token=")
        .unwrap_or_else(|| panic!("no sign-in link in the log:\n{logs}"));
    logs[start..]
        .split(|c: char| c.is_whitespace() || c == '"')
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn cookie_of(answer: &support::http::Answer) -> String {
    answer
        .header(axum::http::header::SET_COOKIE)
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn csrf_of(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let start = page
        .find(marker)
        .map(|i| i + marker.len())
        .unwrap_or_else(|| panic!("no CSRF field in:\n{page}"));
    page[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_trial_without_a_token_should_print_a_link_that_signs_in() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let roster = start(&data, dir.path(), &url).await;
    let link = printed_link(&roster.logs());
    let kept = std::fs::read_to_string(data.join("api-token")).expect("the token file");
    assert!(
        link.ends_with(kept.trim()),
        "{link} signs in with the kept token"
    );

    // Every example repository is read; the owner of search-api names no
    // team of teams.yaml, so a reader without credentials sees it hidden.
    let project = "/api/v1/projects/search-api";
    eventually("search-api registered", LIMIT, || async {
        let a = get(&roster.url(project)).await.ok()?;
        (a.status == StatusCode::OK).then_some(())
    })
    .await;
    let anonymous = get(&roster.url(project)).await.expect("project").json();
    assert_eq!(anonymous["owner"], "", "{anonymous}");

    // A wrong token in the link signs nobody in.
    let wrong = get(&roster.url("/signin?token=0000")).await.expect("page");
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(cookie_of(&wrong), "");

    let signed = get(&roster.url(&link)).await.expect("sign in");
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.body);
    let cookie = cookie_of(&signed);
    assert!(cookie.starts_with("roster_session="), "{cookie}");
    let headers = [("cookie", cookie.as_str())];
    let seen = send(Method::GET, &roster.url(project), &headers, Vec::new())
        .await
        .expect("project")
        .json();
    assert_eq!(seen["owner"], "team-discovery", "{seen}");

    // Resync from the repository's page, as its button does.
    let page = send(
        Method::GET,
        &roster.url("/repos/local/search-api"),
        &headers,
        Vec::new(),
    )
    .await
    .expect("page");
    let csrf = csrf_of(&page.body);
    let origin = roster.url("");
    let resync = send(
        Method::POST,
        &roster.url("/repos/local/search-api/resync"),
        &[
            ("cookie", cookie.as_str()),
            ("origin", origin.as_str()),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        format!("csrf={csrf}").into_bytes(),
    )
    .await
    .expect("resync");
    assert_eq!(resync.status, StatusCode::SEE_OTHER, "{}", resync.body);
    assert!(roster.terminate().success(), "clean exit");

    // The next start keeps the same token, so the link still works.
    let again = start(&data, dir.path(), &url).await;
    assert_eq!(printed_link(&again.logs()), link);
    assert!(again.terminate().success(), "clean exit");
}

#[tokio::test]
async fn a_trial_with_a_token_set_should_print_no_link() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    let env = [
        ("DATABASE_URL", url),
        (
            "ROSTER_DATA_DIR",
            dir.path().join("data").display().to_string(),
        ),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_API_TOKEN", "a-token-of-the-operator".to_string()),
    ];
    let roster = Roster::start(&env, dir.path()).await;
    assert!(
        !roster.logs().contains("/signin?token="),
        "{}",
        roster.logs()
    );
    assert!(!dir.path().join("data/api-token").exists());
    assert!(roster.terminate().success(), "clean exit");
}
