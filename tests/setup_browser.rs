//! The setup flow in a real browser (headless Chromium): the setup page,
//! the form to GitHub's new-App page (the fake's), "Create GitHub App", and
//! back through Roster's callback to the App's installation page; then the
//! App is stored and its repositories are synced. Prints the time of each
//! step, and photographs the setup page (into `docs/screenshots/` with
//! `ROSTER_UPDATE_SCREENSHOTS=1`). Skipped with a note when `chromium` is not on PATH
//! (`scripts/test` installs it).

use crate::support;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use support::cdp::{find_chromium, Browser};
use support::fake_github::FakeGithub;
use support::github_server::project_yaml;
use support::http::get;
use support::server::eventually;
use support::setup_flow::{self, stored_apps};

const STEP: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_browser_should_walk_the_setup_page_to_github_and_back() {
    let Some(chromium) = find_chromium() else {
        eprintln!("skipped: chromium is not on PATH (scripts/test installs it)");
        return;
    };
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    fake.add_repo_with_file(
        1,
        "widgets",
        "project.yaml",
        &project_yaml("widgets", "Widgets"),
    );
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database");
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let (roster, token) = setup_flow::start(&fake, &url, dir.path()).await;
    let t_start = started.elapsed();
    let mut browser = Browser::start(&chromium, &dir.path().join("profile")).await;
    let github = fake.web_url();
    let mut steps = Vec::new();

    let step = Instant::now();
    browser
        .goto(&roster.url(&format!("/setup?token={token}")))
        .await;
    browser
        .wait_for(
            "the setup page",
            "document.readyState === 'complete' && !!document.querySelector('form#setup')",
            STEP,
        )
        .await;
    let prefilled = browser
        .eval("document.getElementById('public_url').value")
        .await;
    assert_eq!(prefilled, Some(roster.base.clone().into()));
    steps.push(("setup page", step.elapsed()));
    let png = browser.screenshot(560, 480).await;
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot with content"
    );
    if std::env::var("ROSTER_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let file =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots/setup.png");
        std::fs::write(&file, &png).expect("write the screenshot");
    }

    let step = Instant::now();
    browser
        .eval("document.getElementById('org').value = 'acme'; document.querySelector('form#setup button').click(); true")
        .await;
    browser
        .wait_for(
            "the manifest form",
            "document.readyState === 'complete' && !!document.querySelector('form#manifest')",
            STEP,
        )
        .await;
    let action = browser
        .eval("document.querySelector('form#manifest').action")
        .await
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    assert!(
        action.starts_with(&format!(
            "{github}/organizations/acme/settings/apps/new?state="
        )),
        "{action}"
    );
    steps.push(("POST /setup: manifest form", step.elapsed()));

    let step = Instant::now();
    browser
        .eval("document.querySelector('form#manifest button').click(); true")
        .await;
    let on_github = format!(
        "location.href.startsWith('{github}/organizations/acme/settings/apps/new') \
         && !!document.getElementById('create')"
    );
    browser
        .wait_for("GitHub's new-App page", &on_github, STEP)
        .await;
    let posted = fake.posted_manifests();
    assert_eq!(posted.len(), 1);
    assert_eq!(
        posted[0].manifest["hook_attributes"]["url"],
        format!("{}/webhooks/github", roster.base)
    );
    steps.push(("GitHub's new-App page", step.elapsed()));

    let step = Instant::now();
    browser
        .eval("document.getElementById('create').click(); true")
        .await;
    let installed = format!(
        "location.href === '{github}/apps/roster/installations/new' \
         && !!document.getElementById('install')"
    );
    browser
        .wait_for("the App's installation page", &installed, STEP)
        .await;
    steps.push((
        "Create GitHub App → callback → install page",
        step.elapsed(),
    ));
    assert_eq!(stored_apps(&pool).await, 1);

    let step = Instant::now();
    eventually("the repository synced by the new App", STEP, || async {
        let answer = get(&roster.url("/api/v1/projects/widgets")).await.ok()?;
        (answer.status == StatusCode::OK).then_some(())
    })
    .await;
    steps.push(("GitHub source started, repository synced", step.elapsed()));
    let page = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("setup");
    assert_eq!(page.status, StatusCode::NOT_FOUND);

    let figures: Vec<String> = steps
        .iter()
        .map(|(what, took)| format!("{what} {took:.0?}"))
        .collect();
    eprintln!(
        "setup in a browser against the fake GitHub: roster up in setup mode {t_start:.0?}; {}; total {:.0?}",
        figures.join("; "),
        started.elapsed()
    );
}
