//! Tuning of a controller, with defaults that fit most resources.

use std::time::Duration;

use super::backoff::Backoff;

/// Default of [`ControllerConfig::workers`] (`ROSTER_WORKERS`).
pub const DEFAULT_WORKERS: usize = 8;

/// Default of [`ControllerConfig::resync_interval`]
/// (`ROSTER_RESYNC_INTERVAL`): an hour.
pub const DEFAULT_RESYNC_INTERVAL: Duration = Duration::from_secs(3600);

/// Default of [`ControllerConfig::lease`] (the hidden `ROSTER_LEASE`): a
/// minute (docs/operations.md#settings).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// Default of [`ControllerConfig::batch_size`] (`ROSTER_BATCH_SIZE`): what
/// one GraphQL query reads.
pub const DEFAULT_BATCH_SIZE: usize = 100;

/// How a [`super::Controller`] runs. `Default` gives the documented values (docs/operations.md#settings).
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// Concurrent workers in this process.
    pub workers: usize,
    /// Period of the full listing (one per period across all replicas).
    pub resync_interval: Duration,
    /// How often a replica asks whether a listing is due or was requested.
    pub listing_check: Duration,
    /// Length of a claim; renewed every third of it while the work runs.
    /// An attempt that could not renew for two thirds of it is dropped, so
    /// it never outlives its lease (see [`super::lease`]).
    pub lease: Duration,
    /// Most keys a worker claims and reads at once (one batch).
    pub batch_size: usize,
    /// Most workers reading their batch from the storage at the same time.
    /// The others wait before claiming, so what arrives meanwhile joins
    /// their batch instead of costing a read of its own.
    pub concurrent_reads: usize,
    /// Idle workers look for work this often even without a wake-up.
    pub poll_interval: Duration,
    /// How long in-flight work may run on after shutdown was asked.
    pub shutdown_grace: Duration,
    pub backoff: Backoff,
    /// Names this process in claims, so a lease can be traced to a replica.
    pub worker_name: String,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            resync_interval: DEFAULT_RESYNC_INTERVAL,
            listing_check: Duration::from_secs(1),
            lease: DEFAULT_LEASE,
            batch_size: DEFAULT_BATCH_SIZE,
            concurrent_reads: 2,
            poll_interval: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(20),
            backoff: Backoff::default(),
            worker_name: format!("pid-{}", std::process::id()),
        }
    }
}
