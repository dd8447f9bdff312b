//! Outbound notifications: every change of the log POSTed, signed, to each
//! URL of `ROSTER_NOTIFY_URLS` (see docs/operations.md, "Notifications").
//!
//! The outbox is the change log itself: each target has a cursor in
//! PostgreSQL ([`outbox`]) that moves only when the target answered 2xx,
//! so delivery is at least once, in `seq` order, and survives restarts.
//! One task per target ([`target`]) with a lease on the target's row, so
//! two replicas do not both send in normal operation.

pub mod metrics;
pub mod outbox;
pub mod sign;
pub mod stall;
pub mod target;

use std::sync::Arc;
use std::time::Duration;

use octocrab::Octocrab;
use secrecy::SecretString;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use metrics::NotifyMetrics;
pub use target::Delivery;

use crate::controller::Backoff;
use crate::registry::changes::ChangeWaker;

/// One whole delivery (connect, send, answer) at most.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the notifier cannot start.
#[derive(Debug, thiserror::Error)]
#[error("notifications: {0}")]
pub struct NotifyError(String);

/// Registers every URL (a new one starts at the head of the log), then
/// starts one delivery task per URL; each stops when `stop` turns true.
/// `lease` is how long a replica keeps a target without renewing (the
/// workers' lease; it must exceed [`TIMEOUT`]).
///
/// Call it before the workers start, so that a target configured now
/// receives every change this process writes.
#[allow(clippy::too_many_arguments)]
pub async fn spawn(
    pool: PgPool,
    waker: ChangeWaker,
    urls: &[String],
    secret: SecretString,
    metrics: NotifyMetrics,
    lease: Duration,
    stop: watch::Receiver<bool>,
) -> Result<Vec<JoinHandle<()>>, NotifyError> {
    for url in urls {
        outbox::register(&pool, url)
            .await
            .map_err(|e| NotifyError(format!("cannot register {}: {e}", redact(url))))?;
    }
    let delivery = Arc::new(Delivery {
        pool,
        transport: transport(TIMEOUT)?,
        secret,
        owner: replica_id(),
        waker,
        metrics,
        timeout: TIMEOUT,
        lease: lease.max(TIMEOUT + Duration::from_secs(1)),
        backoff: Backoff::default(),
    });
    Ok(urls
        .iter()
        .map(|url| tokio::spawn(delivery.clone().run(url.clone(), stop.clone())))
        .collect())
}

/// The HTTP(S) client deliveries go through (rustls, no redirects).
pub fn transport(timeout: Duration) -> Result<Octocrab, NotifyError> {
    Octocrab::builder()
        .set_connect_timeout(Some(timeout))
        .build()
        .map_err(|e| NotifyError(format!("cannot build the HTTP client: {e}")))
}

/// Names this process in leases: host name, process id and a random part.
pub fn replica_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "roster".to_owned());
    format!("{host}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// A target's URL as logs, metrics and pages show it: without the user and
/// password it may carry, and without its query (which may hold a token).
pub use crate::config::redact_url as redact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_should_drop_credentials_and_query() {
        assert_eq!(
            redact("https://user:pw@hooks.example.com/roster?token=abc"),
            "https://hooks.example.com/roster"
        );
        assert_eq!(redact("not a url"), "(invalid URL)");
    }
}
