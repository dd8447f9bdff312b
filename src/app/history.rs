//! The change log's background work, started with the server: the feed's
//! listener, pruning, and one delivery task per notification target.

use prometheus_client::registry::Registry;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Settings;
use crate::notify::NotifyMetrics;
use crate::registry::changes::{self, ChangeWaker};
use crate::shutdown::Shutdown;
use crate::web::api_changes::ChangesState;
use crate::web::long_polls::LongPolls;

/// What the run keeps of it.
pub struct History {
    /// The state of the feed's routes.
    pub feed: ChangesState,
    /// Pruning and the deliveries; each ends once the shutdown signal came.
    pub tasks: Vec<JoinHandle<()>>,
}

/// Starts it all; notification targets are registered before this returns
/// (so before the workers start), so they receive every change from now on.
pub async fn start(
    pool: &PgPool,
    settings: &Settings,
    registry: &mut Registry,
    shutdown: &Shutdown,
) -> anyhow::Result<History> {
    let (stop_tx, stop) = watch::channel(false);
    let signal = shutdown.wait();
    let mut tasks = vec![tokio::spawn(async move {
        signal.await;
        let _ = stop_tx.send(true);
    })];
    let waker = ChangeWaker::start(pool.clone());
    let mut stopped = stop.clone();
    tasks.push(tokio::spawn(changes::prune::run_pruning_loop(
        pool.clone(),
        settings.history_retention,
        changes::prune::PRUNE_INTERVAL,
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    )));
    let metrics = NotifyMetrics::register(registry.sub_registry_with_prefix("roster"));
    let dropped = crate::notify::outbox::forget_others(pool, &settings.notify.urls).await?;
    if dropped > 0 {
        tracing::info!(
            dropped,
            "notify: targets no longer in ROSTER_NOTIFY_URLS dropped, with their backlog"
        );
    }
    if let Some(secret) = settings.notify.secret.clone() {
        let deliveries = crate::notify::spawn(
            pool.clone(),
            waker.clone(),
            &settings.notify.urls,
            secret,
            metrics,
            settings.lease,
            stop.clone(),
        )
        .await?;
        tasks.extend(deliveries);
    }
    let feed = ChangesState {
        pool: pool.clone(),
        waker,
        stop,
        long_polls: LongPolls::new(settings.long_polls),
    };
    Ok(History { feed, tasks })
}
