//! The `/owners` page in a real browser (headless Chromium), over the
//! seeded organisation of the dashboard's browser test and a directory of
//! its teams: a renamed team and a deleted one come first (an owner that
//! names nobody is withheld from a reader without sign-in), then each team
//! with its projects. Photographed as
//! `owners.png` (see `browser.rs` for where screenshots go).

use crate::browser::{dump_dom, find_chromium, screenshot, screenshot_dir, seed};
use crate::support;

use roster::directory::db::Account;
use roster::directory::{DirectoryDb, Part, Rows, Team};
use roster::source::InstallationId;
use sqlx::PgPool;
use support::router::{self, Options};

/// acme's teams as GitHub shows them now: `team-platform` was renamed
/// `team-platform-core`, `team-finance` was deleted, and no team is called
/// `team-mobile` (the files' owner) but `team-mobility` is.
async fn teams(pool: &PgPool) {
    let team = |id: i64, slug: &str, name: &str| Team {
        id,
        slug: slug.to_owned(),
        name: name.to_owned(),
        parent_id: None,
        secret: false,
    };
    let db = DirectoryDb::new(pool.clone());
    let account = Account {
        org_id: 7_001,
        login: "acme".to_owned(),
        installation_id: Some(InstallationId(7)),
        personal: false,
    };
    db.ensure_account(&account).await.expect("account");
    let before = db.read_started().await.expect("start");
    let old = [
        team(3, "team-platform", "Platform"),
        team(6, "team-finance", "Finance"),
    ];
    db.put(7_001, Rows::Teams(&old), before)
        .await
        .expect("old teams");
    let now = db.read_started().await.expect("start");
    let current = [
        team(1, "team-payments", "Payments"),
        team(2, "team-discovery", "Discovery"),
        team(3, "team-platform-core", "Platform"),
        team(4, "team-data", "Data"),
        team(5, "team-mobility", "Mobility"),
        team(7, "team-security", "Security"),
    ];
    db.put(7_001, Rows::Teams(&current), now)
        .await
        .expect("teams");
    db.finish(7_001, Part::Teams, now).await.expect("finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_should_show_dangling_owners_first_and_take_a_screenshot() {
    let Some(binary) = find_chromium() else {
        eprintln!(
            "note: chromium is not on PATH; skipping the browser test (scripts/test installs it)"
        );
        return;
    };
    let options = Options {
        api_token: Some("browser-test-token"),
        github_web_url: Some("https://github.com"),
    };
    let f = router::fixture(options, |_, _| {}).await;
    seed(&f.pool).await;
    teams(&f.pool).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, f.app).await });
    let profile = tempfile::tempdir().expect("profile dir");

    let overview = dump_dom(&binary, profile.path(), &format!("{base}/")).await;
    assert!(
        overview.contains("<a href=\"/owners\">Owners</a>"),
        "{overview}"
    );
    let page = dump_dom(&binary, profile.path(), &format!("{base}/owners")).await;
    // Without sign-in an owner that names nobody is withheld like a member
    // or a secret team (docs/contract.md): the reader cannot probe names.
    assert!(!page.contains("team-mobile\""), "{page}");
    let order: Vec<usize> = [
        "\"team-platform\" was renamed to \"team-platform-core\"; update the file",
        "team \"team-finance\" was deleted in acme",
        "<h3>Teams</h3>",
        "<strong>team-payments</strong>",
    ]
    .iter()
    .map(|needle| {
        page.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} on the owners page:\n{page}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{page}");
    assert!(page.contains("/projects/checkout-api"));

    let (dir, _keep) = screenshot_dir();
    screenshot(
        &binary,
        profile.path(),
        &format!("{base}/owners"),
        &dir.join("owners.png"),
        (1280, 1100),
    )
    .await;
    eprintln!("screenshot in {}", dir.display());
}
