//! The change log's background work, started with the server: the feed's
//! listener, pruning, and one delivery task per notification target.

use std::time::Duration;

use prometheus_client::registry::Registry;
use sqlx::PgPool;

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
}

/// Starts it all, each task spawned through `shutdown`; notification
/// targets are registered before this returns (so before the workers
/// start), so they receive every change from now on.
pub async fn start(
    pool: &PgPool,
    settings: &Settings,
    registry: &mut Registry,
    shutdown: &Shutdown,
) -> anyhow::Result<History> {
    let waker = ChangeWaker::start(pool.clone());
    let bounds = Bounds {
        retention: settings.history_retention,
        max_bytes: settings.history_max_bytes,
    };
    let pruning = run_pruning_loop(pool.clone(), bounds, changes::prune::PRUNE_INTERVAL);
    let stopped = shutdown.wait();
    shutdown.spawn("change log pruning", async move {
        tokio::select! {
            () = pruning => {}
            () = stopped => {}
        }
    });
    let metrics = NotifyMetrics::register(registry.sub_registry_with_prefix("roster"));
    let dropped = crate::notify::outbox::forget_others(pool, &settings.notify.urls).await?;
    if dropped > 0 {
        tracing::info!(
            dropped,
            "notify: targets no longer in ROSTER_NOTIFY_URLS dropped, with their backlog"
        );
    }
    if let Some(secret) = settings.notify.secret.clone() {
        let delivery = crate::notify::Delivery::new(
            pool.clone(),
            waker.clone(),
            secret,
            metrics,
            settings.lease,
            crate::web::json::change_body,
        )?;
        crate::notify::spawn(delivery, &settings.notify.urls, shutdown).await?;
    }
    let feed = ChangesState {
        pool: pool.clone(),
        waker,
        stop: shutdown.clone(),
        long_polls: LongPolls::new(settings.long_polls),
        access: None,
    };
    Ok(History { feed })
}

/// How much of the change log is kept.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub retention: Duration,
    pub max_bytes: u64,
}

/// One round of keeping the log within its bounds: expired changes go,
/// targets more than the size bound behind are stalled, then the oldest
/// changes go while the log is over the size bound.
pub async fn prune_round(pool: &PgPool, bounds: Bounds) -> Result<(), sqlx::Error> {
    let expired = changes::prune::prune_expired(pool, bounds.retention).await?;
    if expired > 0 {
        tracing::info!(removed = expired, "change log: pruned expired changes");
    }
    for stalled in crate::notify::stall::stall_behind(pool, bounds.max_bytes).await? {
        tracing::warn!(
            target_url = %stalled.target,
            first_seq = stalled.first_seq,
            last_seq = stalled.last_seq,
            max_bytes = bounds.max_bytes,
            "notify: target stalled, more than the change log's size bound behind; \
             its backlog was dropped"
        );
    }
    let needed_after = crate::notify::stall::needed_after(pool).await?;
    let oversize = changes::prune::prune_oversize(pool, bounds.max_bytes, needed_after).await?;
    if oversize > 0 {
        tracing::info!(
            removed = oversize,
            "change log: pruned the oldest changes over the size bound"
        );
    }
    Ok(())
}

/// Runs [`prune_round`] every `interval`; errors are logged and the next
/// round tries again.
async fn run_pruning_loop(pool: PgPool, bounds: Bounds, interval: Duration) {
    loop {
        if let Err(error) = prune_round(&pool, bounds).await {
            tracing::warn!(%error, "change log: pruning failed");
        }
        tokio::time::sleep(interval).await;
    }
}
