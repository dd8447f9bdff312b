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

pub use metrics::NotifyMetrics;
pub use target::{Delivery, EncodeChange};

use crate::controller::Backoff;
use crate::registry::changes::ChangeWaker;
use crate::shutdown::Shutdown;

/// One whole delivery (connect, send, answer) at most.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why the notifier cannot start.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// A target's row could not be written; the URL is shown redacted.
    #[error("notifications: cannot register {url}: {source}")]
    Register {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("notifications: cannot build the HTTP client: {0}")]
    Client(#[source] octocrab::Error),
}

/// Registers every URL (a new one starts at the head of the log), then
/// starts one delivery task per URL, sharing `delivery`; each is spawned
/// through `shutdown` and stops when it is asked.
///
/// Call it before the workers start, so that a target configured now
/// receives every change this process writes.
pub async fn spawn(
    delivery: Delivery,
    urls: &[String],
    shutdown: &Shutdown,
) -> Result<(), NotifyError> {
    for url in urls {
        outbox::register(&delivery.pool, url)
            .await
            .map_err(|source| NotifyError::Register {
                url: redact(url),
                source,
            })?;
    }
    let labels = labels(urls);
    let delivery = Arc::new(delivery);
    for (url, label) in urls.iter().zip(labels) {
        let run = delivery
            .clone()
            .run_as(url.clone(), label, shutdown.clone());
        shutdown.spawn("notify target", run);
    }
    Ok(())
}

impl Delivery {
    /// What every target of this replica shares. `lease` is how long a
    /// replica keeps a target without renewing (the workers' lease; it is
    /// raised above [`TIMEOUT`]); `encode` writes a change as a body.
    pub fn new(
        pool: PgPool,
        waker: ChangeWaker,
        secret: SecretString,
        metrics: NotifyMetrics,
        lease: Duration,
        encode: EncodeChange,
    ) -> Result<Self, NotifyError> {
        Ok(Delivery {
            pool,
            transport: transport(TIMEOUT)?,
            secret,
            owner: replica_id(),
            waker,
            metrics,
            timeout: TIMEOUT,
            lease: lease.max(TIMEOUT + Duration::from_secs(1)),
            backoff: Backoff::default(),
            encode,
        })
    }
}

/// The HTTP(S) client deliveries go through (rustls, no redirects).
pub fn transport(timeout: Duration) -> Result<Octocrab, NotifyError> {
    Octocrab::builder()
        .set_connect_timeout(Some(timeout))
        .build()
        .map_err(NotifyError::Client)
}

/// Names this process in leases: host name, process id and a random part.
pub fn replica_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "roster".to_owned());
    format!("{host}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// A target's URL as logs, metrics and pages show it: scheme, host and
/// port only, since many services keep a webhook's secret in its path.
pub use crate::config::redact_url as redact;

/// What each of `urls` is shown as: [`redact`]ed, and numbered (` #2`,
/// ` #3`, in the order of the full URLs) when several share scheme, host
/// and port, so that two Slack channels stay two rows and two series.
/// The same set of URLs gives the same names on every replica.
pub fn labels(urls: &[String]) -> Vec<String> {
    let mut sorted: Vec<&String> = urls.iter().collect();
    sorted.sort();
    urls.iter()
        .map(|url| {
            let origin = redact(url);
            let same: Vec<&&String> = sorted.iter().filter(|u| redact(u) == origin).collect();
            match same.iter().position(|u| **u == url) {
                Some(rank) if same.len() > 1 && rank > 0 => format!("{origin} #{}", rank + 1),
                _ => origin,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_should_keep_only_scheme_host_and_port() {
        assert_eq!(
            redact("https://user:pw@hooks.example.com/roster?token=abc#x"),
            "https://hooks.example.com"
        );
        assert_eq!(
            redact("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"),
            "https://hooks.slack.com"
        );
        assert_eq!(
            redact("http://127.0.0.1:9000/api/webhooks/123/secret-token"),
            "http://127.0.0.1:9000"
        );
        assert_eq!(redact("http://[::1]:8080/x/y"), "http://[::1]:8080");
        assert_eq!(redact("not a url"), "(invalid URL)");
    }

    #[test]
    fn labels_should_number_targets_that_share_an_origin() {
        let urls = [
            "https://hooks.slack.com/services/T1/B2/zzz".to_owned(),
            "https://example.com/hook".to_owned(),
            "https://hooks.slack.com/services/T1/B2/aaa".to_owned(),
        ];
        assert_eq!(
            labels(&urls),
            vec![
                "https://hooks.slack.com #2".to_owned(),
                "https://example.com".to_owned(),
                "https://hooks.slack.com".to_owned(),
            ]
        );
        let mut reversed = urls.clone();
        reversed.reverse();
        let mut again = labels(&reversed);
        again.reverse();
        assert_eq!(
            again,
            labels(&urls),
            "the order of the setting does not matter"
        );
    }
}
