//! What the running parts share, whatever the source: built once from the
//! settings, then handed to the source's wiring and to the run.

use std::sync::Arc;

use prometheus_client::registry::Registry;
use sqlx::PgPool;

use crate::config::Settings;
use crate::controller::{ControllerConfig, ControllerMetrics};
use crate::db::queue::PgQueue;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// The pool, the queue, the metrics and the controller's tuning.
pub struct Shared {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub metrics: Arc<Metrics>,
    pub controller_metrics: ControllerMetrics,
    /// Everything `/metrics` exposes.
    pub registry: Registry,
    pub config: ControllerConfig,
    /// The shutdown signal: the server, the controller and the source's
    /// background work all stop on it.
    pub shutdown: Shutdown,
}

impl Shared {
    /// Registers the metrics and builds the queue on `pool`.
    pub fn new(settings: &Settings, pool: PgPool, shutdown: Shutdown) -> Self {
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
        Self {
            pool,
            queue,
            metrics,
            controller_metrics,
            registry,
            config,
            shutdown,
        }
    }
}
