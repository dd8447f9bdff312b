//! What the dashboard and the log say about an installation's owners and
//! grants: GitHub refusing the member list turns owner checking off, said
//! once in the log and as one notice until the permission comes; an
//! installation that lacks permissions or events `app.yml` asks for is
//! named with a link to the App's settings.

use crate::holds::Logs;
use crate::support;
use crate::support::registry::queue;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use prometheus_client::registry::Registry;
use roster::controller::Lister;
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::github::GithubSource;
use roster::metrics::Metrics;
use sqlx::PgPool;
use support::fake_github::FakeGithub;

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    queue: Arc<PgQueue>,
    source: GithubSource,
}

async fn env() -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    fake.add_team(1, "platform", false);
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let source = GithubSource::connect(&fake.settings(), "project.yaml", pool.clone(), metrics)
        .await
        .expect("connect");
    Env {
        queue: queue(&pool),
        fake,
        pool,
        source,
    }
}

impl Env {
    async fn list(&self) {
        self.source.lister().list().await.expect("listing");
    }

    /// The overview page's body.
    async fn overview(&self) -> String {
        let options = support::router::Options {
            api_token: None,
            github_web_url: Some("https://github.com"),
        };
        let app = support::router::app_on(&self.pool, &self.queue, options, |_, _| {}, |_| {});
        let request = Request::get("/").body(Body::empty()).expect("request");
        let answer = support::router::send(&app, request).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.body
    }
}

#[tokio::test]
async fn a_refused_member_list_should_turn_owner_checking_off_said_once() {
    let env = env().await;
    env.fake.forbid_member_list(1, true);
    let logs = Logs::default();
    let guard = logs.capture();
    env.list().await;
    env.list().await;
    drop(guard);
    let said = logs.warnings_about("owner checking is off");
    assert_eq!(said.len(), 1, "once in the log: {said:?}");
    assert!(said[0].contains("members: read"), "{}", said[0]);
    let page = env.overview().await;
    assert_eq!(
        page.matches("Owner checking is off for acme").count(),
        1,
        "{page}"
    );
    assert!(page.contains("Resource not accessible by integration"));

    // The permission granted: the next listing turns it on again.
    env.fake.forbid_member_list(1, false);
    env.list().await;
    assert!(!env.overview().await.contains("Owner checking is off"));
}

#[tokio::test]
async fn missing_permissions_and_events_should_be_named_with_the_settings_link() {
    let env = env().await;
    env.list().await;
    assert!(!env.overview().await.contains("lacks what Roster asks for"));
    // An App registered before it asked for members and the team events.
    env.fake.grant(
        1,
        &[
            ("metadata", "read"),
            ("contents", "read"),
            ("checks", "read"),
            ("pull_requests", "read"),
        ],
        &[
            "push",
            "repository",
            "pull_request",
            "check_suite",
            "check_run",
        ],
    );
    env.list().await;
    let page = env.overview().await;
    assert!(
        page.contains(
            "Installation 1 (acme) lacks what Roster asks for: permissions \
             <code>checks: write</code>, <code>members: read</code>; events <code>team</code>, \
             <code>membership</code>, <code>organization</code>."
        ),
        "{page}"
    );
    assert!(page.contains(
        "href=\"https://github.com/organizations/acme/settings/apps/roster/permissions\""
    ));
    let (permissions, events) = roster::setup::asked::asked();
    let permissions: Vec<(&str, &str)> = permissions
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    env.fake.grant(1, &permissions, &events);
    env.list().await;
    assert!(!env.overview().await.contains("lacks what Roster asks for"));
}
