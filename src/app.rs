//! Builds the server from settings and runs it: the source, the controller,
//! the HTTP routes, until SIGTERM or Ctrl-C (then within
//! [`crate::shutdown::STOP_DEADLINE`]). What every source shares is built in
//! `app/shared.rs`, each source's own parts in `app/source.rs`.

mod change_log_tasks;
mod setup_mode;
mod shared;
mod source;
mod trial_token;

use std::net::SocketAddr;
use std::sync::Arc;

use sqlx::PgPool;

use crate::config::{ConfigError, Settings, SourceSetting};
use crate::controller::{Controller, Lister, Storage};
use crate::registry::{DeletionGuard, RegistryHandler, RegistryTracker};
use crate::shutdown::{self, Stop};
use crate::source::{Observed, RepoId};
use crate::web::{router_with, AppState};
use shared::Shared;
use source::SourceParts;

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
    let (stop, signal) = shutdown::channel();
    stop.on_signal(&signal);
    let shared = Shared::new(&settings, pool, signal);
    let key = match &settings.source {
        SourceSetting::Github => setup_mode::key_for(&settings)?,
        SourceSetting::Dir(_) => None,
    };
    if matches!(settings.source, SourceSetting::Github) {
        setup_mode::check_stored(&settings, &shared.pool, key.as_ref()).await?;
    }
    // Every setting is checked: a wrong one stopped with its one line,
    // nothing logged before it.
    tracing::info!(listen = %settings.listen, source = %settings.source, "roster starting");
    let listener = listen(settings.listen).await?;
    match &settings.source {
        SourceSetting::Dir(path) => {
            let settings = with_trial_token(settings.clone(), listener.local_addr().ok())?;
            let source = source::dir(path, &settings, &shared)?;
            Ok(run(shared, source, &settings, listener, stop).await?)
        }
        SourceSetting::Github => {
            // The App from the environment, else the one stored by setup,
            // else setup mode until one is stored.
            let found =
                setup_mode::app_or_setup(&settings, &shared.pool, key, listener, &shared.shutdown)
                    .await?;
            let Some((app, listener)) = found else {
                stop.join().await;
                return Ok(());
            };
            let settings = Settings {
                github: Some(app),
                ..settings
            };
            let source = source::github(&settings, &shared).await?;
            Ok(run(shared, source, &settings, listener, stop).await?)
        }
    }
}

/// A local trial without `ROSTER_API_TOKEN` gets a token of its own (see
/// [`trial_token`]) and the log prints the link that signs in with it.
fn with_trial_token(
    settings: Settings,
    address: Option<SocketAddr>,
) -> Result<Settings, ConfigError> {
    if settings.api_token.is_some() {
        return Ok(settings);
    }
    let token = trial_token::load_or_create(&settings.data_dir)
        .map_err(|e| ConfigError::new("ROSTER_DATA_DIR", e.to_string()))?;
    let address = address.unwrap_or(settings.listen);
    let host = if address.ip().is_unspecified() {
        format!("127.0.0.1:{}", address.port())
    } else {
        address.to_string()
    };
    tracing::info!(
        file = %settings.data_dir.join(trial_token::TOKEN_FILE).display(),
        "no ROSTER_API_TOKEN set: this trial's token is kept in the data folder; sign in (every owner shown, resync allowed) at {}",
        trial_token::sign_in_link(&format!("http://{host}"), &token),
    );
    Ok(Settings {
        api_token: Some(token),
        ..settings
    })
}

/// Binds the HTTP port; failing to is a setting found wrong at start.
async fn listen(address: SocketAddr) -> Result<tokio::net::TcpListener, ConfigError> {
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
        ConfigError::new("ROSTER_LISTEN", format!("cannot listen on {address}: {e}"))
    })?;
    tracing::info!(%address, "listening");
    Ok(listener)
}

/// Runs the controller and the HTTP server side by side; both stop on the
/// shutdown signal (`stop` is asked on SIGTERM or Ctrl-C), the server first
/// finishing the requests in flight. Every task spawned through the
/// shutdown (the source's background work, the change log's, the webhook
/// writers) is then joined, and the log says how many.
async fn run<L, S>(
    parts: Shared,
    source: SourceParts<L, S>,
    settings: &Settings,
    listener: tokio::net::TcpListener,
    stop: Stop,
) -> anyhow::Result<()>
where
    L: Lister<Key = RepoId, Partition = crate::source::Partition>,
    S: Storage<Key = RepoId, State = Observed>,
{
    let SourceParts {
        lister,
        storage,
        routes: extra_routes,
        web_url: github_web_url,
    } = source;
    let Shared {
        shutdown: signal,
        pool,
        queue,
        metrics,
        controller_metrics,
        mut registry,
        config,
    } = parts;
    let history = change_log_tasks::start(&pool, settings, &mut registry, &signal).await?;
    let guard = DeletionGuard::new(settings.max_removals, settings.resync_interval);
    let handler = RegistryHandler::new(pool.clone(), queue.clone(), settings.project_file())
        .with_project_files(&settings.project_files)
        .with_guard(guard)
        .with_default_branch_checks(settings.checks.default_branch())
        .with_owners(settings.owners)
        .with_relations(settings.relations);
    let tracker = RegistryTracker::new(pool.clone()).with_guard(guard);
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

    let state_pool = pool.clone();
    let state = AppState {
        pool,
        queue,
        metrics,
        registry: Arc::new(registry),
        api_token: settings.api_token.clone(),
        github_web_url,
        project_file: settings.project_file(),
        resync_interval: settings.resync_interval,
        auth_throttle: Arc::default(),
        trust_proxy: settings.trust_proxy,
        relations: settings.relations,
        graph_reads: Default::default(),
    };
    // The feed tells readers with credentials from others as the other
    // routes do (docs/contract.md#what-a-reader-without-credentials-sees).
    let feed = crate::web::api_changes::ChangesState {
        access: Some(state.clone()),
        ..history.feed
    };
    let app = router_with(state, extra_routes).merge(crate::web::router::changes(feed));
    crate::memory::return_freed(&signal);
    // Entries follow their owner team through renames and deletions.
    let following = crate::registry::owner_follow::run(state_pool, settings.owners, signal.wait());
    signal.spawn("owner following", following);
    let server = crate::web::serve::serve(listener, app, signal.wait());
    let controller = controller.run(signal.clone());
    let ((), ()) = tokio::join!(server, controller);
    stop.stop();
    let joined = stop.join().await;
    tracing::info!(
        spawned = joined.spawned,
        joined = joined.joined,
        panicked = joined.panicked,
        "stopped: every task joined"
    );
    Ok(())
}
