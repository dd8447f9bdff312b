//! A generic, level-driven controller: triggers enqueue keys, workers read
//! the latest state and make the world match. Knows nothing of GitHub, YAML
//! or SQL.

pub mod backoff;
mod batch;
pub mod config;
pub mod lease;
pub mod metrics;
pub mod pace;
pub mod queue;
pub mod runner;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod traits;

pub use backoff::Backoff;
pub use config::{
    ControllerConfig, DEFAULT_BATCH_SIZE, DEFAULT_LEASE, DEFAULT_RESYNC_INTERVAL, DEFAULT_WORKERS,
};
pub(crate) use metrics::register_metrics;
pub use metrics::ControllerMetrics;
pub use pace::ReadPace;
pub use queue::{Claim, Enqueue, ItemStatus, ListingSchedule, Trigger, WorkQueue};
pub use runner::Controller;
pub use traits::{
    AppliedTogether, Failure, Found, Handler, Listed, Lister, NoState, Storage, Tracker,
};
