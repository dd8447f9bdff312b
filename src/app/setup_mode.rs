//! Which App `serve` runs with: the environment's, else the one stored by
//! setup, else none yet: then setup mode serves the setup page until an
//! App is stored (by this replica or another), and hands the listener back
//! so the GitHub source starts without a restart.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::request::Parts;

use futures_util::FutureExt;
use secrecy::SecretString;
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::config::{ConfigError, GithubAppSettings, Settings};
use crate::setup::routes::TokenGate;
use crate::setup::store::{self, StoreError, StoredApp};
use crate::setup::{SecretKey, SetupState};
use crate::shutdown::Shutdown;
use crate::web::throttle::{Attempt, FailureThrottle};
use crate::web::throttle_key::client_of;

/// How often setup mode looks for an App another replica stored.
const POLL: Duration = Duration::from_secs(3);

/// The App to run with and the listener, or `None` when asked to stop
/// during setup mode.
/// `key` is [`key_for`]'s answer, found before the port was bound.
pub(super) async fn app_or_setup(
    settings: &Settings,
    pool: &PgPool,
    key: Option<SecretKey>,
    listener: TcpListener,
    shutdown: &Shutdown,
) -> Result<Option<(GithubAppSettings, TcpListener)>, ConfigError> {
    if let Some(app) = &settings.github {
        return Ok(Some((app.clone(), listener)));
    }
    if let Some(app) = stored(settings, pool, key.as_ref()).await? {
        return Ok(Some((app, listener)));
    }
    let key = key.ok_or_else(key_required)?;
    let Some(listener) = serve_setup(settings, pool, &key, listener, shutdown).await? else {
        return Ok(None);
    };
    match stored(settings, pool, Some(&key)).await? {
        Some(app) => Ok(Some((app, listener))),
        None => Err(ConfigError::new(
            "GITHUB_APP_ID",
            "setup ended without an App",
        )),
    }
}

/// The key the App stored by setup is encrypted with, when no App comes
/// from the environment: checked with the other settings, before the port
/// is bound and `listening` logged (docs/operations.md: a wrong setting
/// stops `serve` at start). Without an App and without a key on a shared
/// database, neither setup mode nor a stored App can run.
pub(super) fn key_for(settings: &Settings) -> Result<Option<SecretKey>, ConfigError> {
    if settings.github.is_some() {
        return Ok(None);
    }
    secret_key(settings)?.map(Some).ok_or_else(key_required)
}

fn key_required() -> ConfigError {
    ConfigError::new(
        "ROSTER_SECRET_KEY",
        "required in setup mode (no GITHUB_APP_ID) when DATABASE_URL is set: the App \
         setup stores is encrypted with it, and every replica reads it back with it \
         (64 hex characters: `openssl rand -hex 32`)",
    )
}

/// `ROSTER_SECRET_KEY`, else (with the private database) the key file
/// under the data folder; `None` with a shared database and no key.
fn secret_key(settings: &Settings) -> Result<Option<SecretKey>, ConfigError> {
    if let Some(key) = &settings.setup.secret_key {
        return Ok(Some(key.clone()));
    }
    if settings.database_url.is_some() {
        return Ok(None);
    }
    SecretKey::load_or_create(&settings.data_dir)
        .map(Some)
        .map_err(|e| ConfigError::new("ROSTER_SECRET_KEY", e.to_string()))
}

/// Whether the App stored by setup, if any, opens with `key`: checked
/// before anything is logged, so that a changed `ROSTER_SECRET_KEY` stops
/// `serve` with its one `error:` line (docs/operations.md).
pub(super) async fn check_stored(
    settings: &Settings,
    pool: &PgPool,
    key: Option<&SecretKey>,
) -> Result<(), ConfigError> {
    if settings.github.is_none() {
        load_stored(pool, key).await?;
    }
    Ok(())
}

/// The stored App as settings, when one is stored.
async fn stored(
    settings: &Settings,
    pool: &PgPool,
    key: Option<&SecretKey>,
) -> Result<Option<GithubAppSettings>, ConfigError> {
    let Some(app) = load_stored(pool, key).await? else {
        return Ok(None);
    };
    tracing::info!(app_id = app.app_id, slug = %app.slug, "using the GitHub App stored by setup");
    Ok(Some(app_settings(&app, settings)))
}

/// The App stored by setup, opened with `key`, when one is stored.
async fn load_stored(
    pool: &PgPool,
    key: Option<&SecretKey>,
) -> Result<Option<StoredApp>, ConfigError> {
    let database = |e: sqlx::Error| ConfigError::new("DATABASE_URL", e.to_string());
    if !store::app_exists(pool).await.map_err(database)? {
        return Ok(None);
    }
    let key = key.ok_or_else(|| {
        ConfigError::new(
            "ROSTER_SECRET_KEY",
            "required to read the GitHub App stored by setup (the key it was stored with)",
        )
    })?;
    match store::load_app(pool, key).await {
        Ok(found) => Ok(found),
        Err(StoreError::Db(e)) => Err(database(e)),
        Err(e) => Err(ConfigError::new("ROSTER_SECRET_KEY", e.to_string())),
    }
}

/// Settings of the stored App, with GitHub's addresses from the settings.
fn app_settings(app: &StoredApp, settings: &Settings) -> GithubAppSettings {
    GithubAppSettings {
        app_id: app.app_id,
        private_key: SecretString::from(app.pem.clone()),
        webhook_secret: SecretString::from(app.webhook_secret.clone()),
        api_url: settings.setup.api_url.clone(),
        graphql_url: settings.setup.graphql_url.clone(),
    }
}

/// Serves the setup routes until an App is stored (the listener is handed
/// back) or the shutdown is asked (`None`).
async fn serve_setup(
    settings: &Settings,
    pool: &PgPool,
    key: &SecretKey,
    listener: TcpListener,
    shutdown: &Shutdown,
) -> Result<Option<TcpListener>, ConfigError> {
    let cannot = |e: std::io::Error| ConfigError::new("ROSTER_LISTEN", e.to_string());
    // One socket, two handles: the setup server closes its own, and the
    // full server then accepts on the other (what waits meanwhile is kept).
    let socket = listener.into_std().map_err(cannot)?;
    let spare = socket.try_clone().map_err(cannot)?;
    let for_setup = TcpListener::from_std(socket).map_err(cannot)?;
    // The one token every replica prints (docs/github-app.md).
    let token = store::logged_token(pool, key)
        .await
        .map_err(|e| ConfigError::new("DATABASE_URL", e.to_string()))?;
    let stored = Arc::new(Notify::new());
    let state = SetupState {
        pool: pool.clone(),
        key: key.clone(),
        github_url: settings.setup.github_url.clone(),
        api_url: settings.setup.api_url.clone(),
        public_url: settings.setup.public_url.clone(),
        stored: stored.clone(),
        gate: Arc::new(ThrottleGate {
            throttle: FailureThrottle::default(),
            trust_proxy: settings.trust_proxy,
        }),
    };
    // The page is opened on this server's own address (a port-forward, or
    // the same path on an internal host); the public address is where
    // GitHub will reach the webhook and the callback, which the page takes
    // from ROSTER_PUBLIC_URL whatever host it is opened on.
    let page = format!(
        "http://{}/setup?token={token}",
        local_address(settings.listen)
    );
    match &settings.setup.public_url {
        Some(public) => tracing::info!(
            "setup mode: no GitHub App yet; register one at {page} (through a port-forward, \
             or the same path on an internal host); GitHub will reach Roster at {}",
            public.base()
        ),
        None => tracing::info!("setup mode: no GitHub App yet; register one at {page}"),
    }
    let watch_pool = pool.clone();
    let app_stored = async move {
        loop {
            tokio::select! {
                () = stored.notified() => return,
                () = tokio::time::sleep(POLL) => {
                    if matches!(store::app_exists(&watch_pool).await, Ok(true)) {
                        return;
                    }
                }
            }
        }
    };
    let stopped = shutdown.wait();
    // Setup ends with a stored App (true) or the shutdown (false).
    let ended = async move {
        tokio::select! {
            () = app_stored => true,
            () = stopped => false,
        }
    }
    .boxed()
    .shared();
    let routes = crate::web::router::setup(state);
    crate::web::serve::serve(for_setup, routes, ended.clone().map(|_| ())).await;
    let app_stored = ended.await;
    if !app_stored {
        return Ok(None);
    }
    tracing::info!("setup done: starting the GitHub source");
    TcpListener::from_std(spare).map(Some).map_err(cannot)
}

/// An address a browser on this machine can open for `listen`.
fn local_address(listen: SocketAddr) -> SocketAddr {
    if listen.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], listen.port()))
    } else {
        listen
    }
}

/// The setup routes' wrong tokens, counted by the failure throttle the
/// write API and sign-in use (setup mode serves neither).
struct ThrottleGate {
    throttle: FailureThrottle,
    trust_proxy: bool,
}

impl TokenGate for ThrottleGate {
    fn attempt(&self, parts: &Parts, valid: bool) -> Result<(), Duration> {
        let client = client_of(parts, self.trust_proxy);
        match self.throttle.attempt(client, Instant::now(), || valid) {
            Attempt::Right | Attempt::Wrong { .. } => Ok(()),
            Attempt::Locked { wait } => Err(wait),
        }
    }
}
