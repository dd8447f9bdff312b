//! The real router on a fresh database, driven in process (no TCP): for
//! tests of what the routes answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use prometheus_client::registry::Registry;
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::metrics::Metrics;
use roster::web::{router, AppState};
use secrecy::SecretString;
use sqlx::PgPool;
use tower::ServiceExt;

use super::http::Answer;

/// A router and the database behind it.
pub struct Fixture {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub app: Router,
}

/// What differs between the tests' servers.
pub struct Options {
    /// The write API's token; `None` turns the write API off.
    pub api_token: Option<&'static str>,
    /// `None` stands for the local folder source (no website, no GitHub).
    pub github_web_url: Option<&'static str>,
}

/// The router on a fresh database; `prepare` registers or sets metrics
/// before they are shared.
pub async fn fixture(options: Options, prepare: impl FnOnce(&mut Registry, &Metrics)) -> Fixture {
    fixture_tuned(options, prepare, |_| {}).await
}

/// Like [`fixture`], with `tune` changing the state before the router is
/// built (e.g. trusting proxy headers).
pub async fn fixture_tuned(
    options: Options,
    prepare: impl FnOnce(&mut Registry, &Metrics),
    tune: impl FnOnce(&mut AppState),
) -> Fixture {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let queue = crate::registry::queue(&pool);
    let app = app_on(&pool, &queue, options, prepare, tune);
    Fixture { pool, queue, app }
}

/// A router on an existing database: another replica beside a fixture's.
pub fn app_on(
    pool: &PgPool,
    queue: &Arc<PgQueue>,
    options: Options,
    prepare: impl FnOnce(&mut Registry, &Metrics),
    tune: impl FnOnce(&mut AppState),
) -> Router {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    prepare(&mut registry, &metrics);
    let mut state = AppState {
        pool: pool.clone(),
        queue: queue.clone(),
        metrics: Arc::new(metrics),
        registry: Arc::new(registry),
        api_token: options.api_token.map(SecretString::from),
        github_web_url: options.github_web_url.map(str::to_owned),
        project_file: "project.yaml".to_owned(),
        resync_interval: Duration::from_secs(3600),
        auth_throttle: Default::default(),
        trust_proxy: false,
        relations: roster::project::relations::RelationsMode::default(),
        graph_reads: Default::default(),
    };
    tune(&mut state);
    router(state)
}

/// Sends one request through the router.
pub async fn send(app: &Router, request: Request<Body>) -> Answer {
    let response = app.clone().oneshot(request).await.expect("router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}
