//! Builds the server from settings and runs it: the source, the controller,
//! the HTTP routes, until SIGTERM or Ctrl-C (then within
//! [`crate::shutdown::STOP_DEADLINE`]).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sqlx::PgPool;

use crate::checks::ChecksWorker;
use crate::config::{ConfigError, Settings, SourceSetting};
use crate::controller::{Controller, ControllerConfig, ControllerMetrics, Lister, Storage};
use crate::db::queue::PgQueue;
use crate::github::webhook::retention::{self, Retention};
use crate::github::webhook::{self, WebhookLimits, WebhookState};
use crate::github::{redelivery, GithubSource};
use crate::metrics::Metrics;
use crate::registry::{RegistryHandler, RegistryTracker};
use crate::source::dir::{DirLister, DirSource, DirStorage};
use crate::source::{Observed, RepoId};
use crate::web::{router_with, AppState};

/// How long a worker's claim on a repository lasts unless renewed (SPEC §4);
/// the hidden setting `ROSTER_LEASE` changes it for tests.
pub const LEASE: Duration = Duration::from_secs(60);

/// What the running parts share: built once, handed to the source's wiring.
struct Parts {
    pool: PgPool,
    queue: Arc<PgQueue>,
    metrics: Arc<Metrics>,
    controller_metrics: ControllerMetrics,
    registry: Registry,
    config: ControllerConfig,
}

/// Why `serve` stopped with an error: a setting found wrong at start (exit
/// code 2) or a failure while running (exit code 1).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
}

/// Runs `roster serve` on a migrated pool until SIGTERM/Ctrl-C.
pub async fn serve(settings: Settings, pool: PgPool) -> Result<(), ServeError> {
    let mut registry = Registry::default();
    let controller_metrics =
        ControllerMetrics::register(registry.sub_registry_with_prefix("roster"));
    let metrics = Arc::new(Metrics::new(&mut registry));
    let adds = controller_metrics.queue_adds.clone();
    let queue = Arc::new(PgQueue::new(pool.clone(), settings.lease).with_adds_counter(adds));
    let config = ControllerConfig {
        workers: settings.workers,
        batch_size: settings.batch_size,
        resync_interval: settings.resync_interval,
        lease: settings.lease,
        ..ControllerConfig::default()
    };
    let parts = Parts {
        pool,
        queue,
        metrics,
        controller_metrics,
        registry,
        config,
    };
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| {
            ConfigError::new(
                "ROSTER_LISTEN",
                format!("cannot listen on {}: {e}", settings.listen),
            )
        })?;
    tracing::info!(address = %settings.listen, "listening");

    match &settings.source {
        SourceSetting::Dir(path) => {
            let root = std::fs::canonicalize(path).map_err(|e| {
                ConfigError::new(
                    "ROSTER_SOURCE",
                    format!("cannot open {}: {e}", path.display()),
                )
            })?;
            let source = DirSource::new(root, settings.project_file.clone());
            let _watcher = crate::source::dir::watch(source.clone(), parts.queue.clone())
                .map_err(|e| ConfigError::new("ROSTER_SOURCE", e.to_string()))?;
            let lister = DirLister {
                source: source.clone(),
            };
            let storage = DirStorage { source };
            let no_routes = axum::Router::new();
            Ok(run(parts, &settings, listener, lister, storage, no_routes, None).await?)
        }
        SourceSetting::Github => {
            let app = settings.github.as_ref().ok_or_else(|| {
                ConfigError::new("GITHUB_APP_ID", "the github source needs a GitHub App")
            })?;
            let (pool, metrics) = (parts.pool.clone(), parts.metrics.clone());
            let source = GithubSource::connect(app, &settings.project_file, pool, metrics)
                .await
                .map_err(|e| ConfigError::new(e.setting(), e.message()))?;
            let hooks = webhook::router(WebhookState {
                pool: parts.pool.clone(),
                queue: parts.queue.clone(),
                secret: app.webhook_secret.clone(),
                metrics: parts.metrics.clone(),
                limits: WebhookLimits {
                    concurrency: settings.webhook_concurrency,
                    ..WebhookLimits::default()
                },
            });
            let web = Some(web_url(&app.api_url));
            let (lister, storage) = (source.lister(), source.storage());
            // Check runs on GitHub, until the server has stopped.
            let (stop_checks, checks_stopped) = tokio::sync::watch::channel(false);
            let checks = ChecksWorker::new(parts.pool.clone(), source.checks(), settings.checks);
            let checks = tokio::spawn(checks.run(async move {
                let mut stopped = checks_stopped;
                let _ = stopped.wait_for(|stop| *stop).await;
            }));
            // Missed deliveries: at start and every few minutes (SPEC §6).
            // Stopping it half-way is safe: each redelivery is recorded
            // once asked, and an unasked one is asked on the next pass.
            let redelivery = tokio::spawn(redelivery::run_redelivery_loop(
                source,
                parts.pool.clone(),
                redelivery::DEFAULT_INTERVAL,
                std::future::pending::<()>(),
            ));
            // The delivery log's bounds (SPEC §8), kept until the server
            // has stopped.
            let (stop_pruning, pruning_stopped) = tokio::sync::watch::channel(false);
            let pruning = tokio::spawn(retention::run_pruning_loop(
                parts.pool.clone(),
                Retention::new(settings.delivery_retention),
                retention::PRUNE_INTERVAL,
                async move {
                    let mut stopped = pruning_stopped;
                    let _ = stopped.wait_for(|stop| *stop).await;
                },
            ));
            let served = run(parts, &settings, listener, lister, storage, hooks, web).await;
            redelivery.abort();
            let _ = stop_checks.send(true);
            let _ = checks.await;
            let _ = stop_pruning.send(true);
            let _ = pruning.await;
            Ok(served?)
        }
    }
}

/// Runs the controller and the HTTP server side by side; both stop on the
/// shutdown signal, the server first finishing the requests in flight.
#[allow(clippy::too_many_arguments)]
async fn run<L, S>(
    parts: Parts,
    settings: &Settings,
    listener: tokio::net::TcpListener,
    lister: L,
    storage: S,
    extra_routes: axum::Router,
    github_web_url: Option<String>,
) -> anyhow::Result<()>
where
    L: Lister<Key = RepoId>,
    S: Storage<Key = RepoId, State = Observed>,
{
    let Parts {
        pool,
        queue,
        metrics,
        controller_metrics,
        registry,
        config,
    } = parts;
    let handler = RegistryHandler::new(pool.clone(), queue.clone(), &settings.project_file)
        .with_deletion_guard(settings.max_removals, settings.resync_interval)
        .with_default_branch_checks(settings.checks.default_branch());
    let tracker = RegistryTracker::new(pool.clone()).with_max_removals(settings.max_removals);
    let (handler, tracker) = (Arc::new(handler), Arc::new(tracker));
    let controller = Controller::new(
        queue.clone(),
        Arc::new(lister),
        tracker,
        Arc::new(storage),
        handler,
    )
    .with_config(config)
    .with_metrics(controller_metrics);

    let state = AppState {
        pool,
        queue,
        metrics,
        registry: Arc::new(registry),
        api_token: settings.api_token.clone(),
        github_web_url,
        project_file: settings.project_file.clone(),
        resync_interval: settings.resync_interval,
        auth_throttle: Arc::default(),
        trust_proxy: settings.trust_proxy,
    };
    let app = router_with(state, extra_routes);

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let signal = tokio::spawn(async move {
        crate::shutdown::signal().await;
        crate::shutdown::exit_after(crate::shutdown::STOP_DEADLINE);
        let _ = stop_tx.send(true);
    });
    let mut for_server = stop_rx.clone();
    let server = crate::web::serve::serve(listener, app, async move {
        let _ = for_server.wait_for(|stop| *stop).await;
    });
    let mut for_controller = stop_rx;
    let controller = controller.run(async move {
        let _ = for_controller.wait_for(|stop| *stop).await;
    });
    let ((), ()) = tokio::join!(server, controller);
    signal.abort();
    tracing::info!("stopped");
    Ok(())
}

/// Where people see repositories: `https://github.com` for the public API,
/// the host itself for GitHub Enterprise Server (`https://host/api/v3`).
fn web_url(api: &url::Url) -> String {
    match api.host_str() {
        Some("api.github.com") | None => "https://github.com".to_owned(),
        Some(host) => {
            let port = api.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{}://{host}{port}", api.scheme())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_url_should_follow_the_api_host() {
        let url = |s: &str| url::Url::parse(s).expect("url");
        assert_eq!(
            web_url(&url("https://api.github.com")),
            "https://github.com"
        );
        assert_eq!(
            web_url(&url("https://ghe.example.com/api/v3")),
            "https://ghe.example.com"
        );
        assert_eq!(
            web_url(&url("http://127.0.0.1:9000/")),
            "http://127.0.0.1:9000"
        );
    }
}
