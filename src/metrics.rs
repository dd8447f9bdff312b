//! Roster's own Prometheus metrics (docs/operations.md#metrics): webhooks, GitHub requests,
//! rate limits and repositories per status. The controller core registers
//! its queue metrics into the same registry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::controller::register_metrics;
use crate::registry::Status;
use crate::source::InstallationId;

/// The events `roster_webhooks_total` names (docs/contract.md#webhooks, and the check-run events);
/// every other name, and every delivery whose name cannot be trusted,
/// counts as [`OTHER_EVENT`]. `X-GitHub-Event` is not covered by the
/// signature, so a label taken from it as is would let anyone holding one
/// signed body mint a series per name.
pub const WEBHOOK_EVENTS: [&str; 11] = [
    "push",
    "repository",
    "installation",
    "installation_repositories",
    "ping",
    "pull_request",
    "check_suite",
    "check_run",
    "team",
    "membership",
    "organization",
];

/// The `event` label of every delivery whose event is not in
/// [`WEBHOOK_EVENTS`].
pub const OTHER_EVENT: &str = "other";

/// The `event` label for `event`: itself when Roster knows it, else
/// [`OTHER_EVENT`].
pub fn webhook_event_label(event: &str) -> &'static str {
    WEBHOOK_EVENTS
        .iter()
        .find(|known| **known == event)
        .copied()
        .unwrap_or(OTHER_EVENT)
}

/// The commit this process was built from, as the binary knows it.
static REVISION: OnceLock<&'static str> = OnceLock::new();

/// Records the commit the binary was built from (its build script reads
/// it), for `roster_build_info`; the first call wins. Without one, the
/// revision is `unknown` (a test, or a build without `.git`).
pub fn set_revision(revision: &'static str) {
    let _ = REVISION.set(revision);
}

/// The commit `roster_build_info` names: what [`set_revision`] recorded,
/// else `unknown`.
pub fn revision() -> &'static str {
    REVISION.get().copied().unwrap_or("unknown")
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    revision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    event: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusCodeLabels {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InstallationLabels {
    installation: InstallationId,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RepoStatusLabels {
    status: String,
}

/// Handles on Roster's metrics; cheap to share behind an `Arc`, every
/// method takes `&self`.
#[derive(Debug, Clone)]
pub struct Metrics {
    webhooks: Family<WebhookLabels, Counter>,
    github_requests: Family<StatusCodeLabels, Counter>,
    rate_limit_remaining: Family<InstallationLabels, Gauge>,
    /// The same values as `rate_limit_remaining`, readable by the dashboard
    /// (a metric family cannot be listed).
    rate_limits: Arc<Mutex<BTreeMap<InstallationId, i64>>>,
    /// Each installation's hourly budget as GitHub reported it.
    rate_limit_sizes: Arc<Mutex<BTreeMap<InstallationId, i64>>>,
    repos: Family<RepoStatusLabels, Gauge>,
    holds: Gauge,
    /// One series, always 1: its labels tell which build answers.
    build: Family<BuildLabels, Gauge>,
}

impl Metrics {
    /// Creates the metrics and registers them into `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            webhooks: Family::default(),
            github_requests: Family::default(),
            rate_limit_remaining: Family::default(),
            rate_limits: Arc::default(),
            rate_limit_sizes: Arc::default(),
            repos: Family::default(),
            holds: Gauge::default(),
            build: Family::default(),
        };
        metrics
            .build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                revision: revision(),
            })
            .set(1);
        // Counters get their `_total` suffix from the encoder.
        register_metrics!(registry;
            "roster_webhooks", "Webhook deliveries received, by event and outcome" => metrics.webhooks;
            "roster_github_requests", "Requests sent to GitHub, by HTTP status of the answer" => metrics.github_requests;
            "roster_github_rate_limit_remaining",
                "Requests left in the current GitHub rate-limit window, per installation" => metrics.rate_limit_remaining;
            "roster_repos", "Tracked repositories, by status" => metrics.repos;
            "roster_holds", "Active deletion-guard holds: removals waiting for an operator" => metrics.holds;
            "roster_build_info", "Which build answers: its version and the commit it was built from (always 1)" => metrics.build;
        );
        metrics
    }

    /// Sets `roster_holds` to the number of active holds (done on scrape).
    pub fn set_active_holds(&self, holds: i64) {
        self.holds.set(holds);
    }

    /// Counts one webhook delivery (`event` as in `X-GitHub-Event`, mapped
    /// by [`webhook_event_label`]; `outcome` is always one of the route's
    /// own words, so the series stay few whatever a sender writes).
    pub fn webhook(&self, event: &str, outcome: &'static str) {
        self.webhooks
            .get_or_create(&WebhookLabels {
                event: webhook_event_label(event),
                outcome,
            })
            .inc();
    }

    /// Counts one answer from GitHub by its HTTP status.
    pub fn github_request(&self, status: u16) {
        self.github_requests
            .get_or_create(&StatusCodeLabels { status })
            .inc();
    }

    /// Records the `x-ratelimit-remaining` GitHub last sent for an installation.
    pub fn rate_limit_remaining(&self, installation: InstallationId, remaining: i64) {
        self.rate_limit_remaining
            .get_or_create(&InstallationLabels { installation })
            .set(remaining);
        self.rate_limits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(installation, remaining);
    }

    /// Records the `x-ratelimit-limit` GitHub last sent for an installation
    /// (5,000 an hour at least; more for large organisations).
    pub fn rate_limit_size(&self, installation: InstallationId, limit: i64) {
        self.rate_limit_sizes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(installation, limit);
    }

    /// The hourly budget last reported for `installation`, if any.
    pub fn rate_limit_size_of(&self, installation: InstallationId) -> Option<i64> {
        self.rate_limit_sizes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&installation)
            .copied()
    }

    /// `(installation, requests left)` as last recorded, by installation id;
    /// empty until GitHub answered once (and always for the local folder).
    pub fn rate_limits(&self) -> Vec<(InstallationId, i64)> {
        self.rate_limits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(|(&installation, &remaining)| (installation, remaining))
            .collect()
    }

    /// Replaces `roster_repos` with fresh counts per status (done on scrape).
    pub fn set_repo_counts(&self, counts: &BTreeMap<String, i64>) {
        // Every status shows, with a zero when no repository has it: alerts on
        // an absent series are awkward. Set in place (no clear) so a
        // concurrent scrape never sees the family empty.
        for status in Status::ALL {
            let count = counts.get(status.as_str()).copied().unwrap_or(0);
            self.repos
                .get_or_create(&RepoStatusLabels {
                    status: status.as_str().to_owned(),
                })
                .set(count);
        }
    }
}

/// An installation id as a label: its number, as GitHub shows it.
impl prometheus_client::encoding::EncodeLabelValue for InstallationId {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelValueEncoder,
    ) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn exposition(registry: &Registry) -> String {
        let mut text = String::new();
        let encoded = encode(&mut text, registry);
        assert!(encoded.is_ok());
        text
    }

    #[test]
    fn metrics_should_expose_every_spec_name_with_its_labels() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.webhook("push", "enqueued");
        metrics.webhook("push", "enqueued");
        metrics.github_request(200);
        metrics.rate_limit_remaining(InstallationId(42), 4999);
        metrics.set_repo_counts(&BTreeMap::from([("synced".to_owned(), 3)]));

        let text = exposition(&registry);
        assert!(
            text.contains(r#"roster_webhooks_total{event="push",outcome="enqueued"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"roster_github_requests_total{status="200"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"roster_github_rate_limit_remaining{installation="42"} 4999"#),
            "{text}"
        );
        assert!(
            text.contains(r#"roster_repos{status="synced"} 3"#),
            "{text}"
        );
        assert!(text.contains(r#"roster_repos{status="error"} 0"#), "{text}");
    }

    #[test]
    fn every_family_should_be_declared_before_its_first_series() {
        let mut registry = Registry::default();
        let _controller = crate::controller::ControllerMetrics::register(
            registry.sub_registry_with_prefix("roster"),
        );
        let _metrics = Metrics::new(&mut registry);
        // A line of its own, the first one too.
        let text = format!("\n{}", exposition(&registry));
        for (name, kind) in [
            ("roster_queue_depth", "gauge"),
            ("roster_queue_adds", "counter"),
            ("roster_queue_retries", "counter"),
            ("roster_reconcile_duration_seconds", "histogram"),
            ("roster_webhooks", "counter"),
            ("roster_github_requests", "counter"),
            ("roster_github_rate_limit_remaining", "gauge"),
            ("roster_repos", "gauge"),
            ("roster_holds", "gauge"),
            ("roster_build_info", "gauge"),
        ] {
            assert!(
                text.contains(&format!("\n# HELP {name} ")),
                "{name}:\n{text}"
            );
            assert!(
                text.contains(&format!("\n# TYPE {name} {kind}\n")),
                "{name}:\n{text}"
            );
        }
    }

    #[test]
    fn build_info_should_name_the_version_and_the_revision() {
        let mut registry = Registry::default();
        let _metrics = Metrics::new(&mut registry);
        let text = exposition(&registry);
        let line = format!(
            "roster_build_info{{version=\"{}\",revision=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            revision()
        );
        assert!(text.contains(&line), "{line}:\n{text}");
    }

    #[test]
    fn webhook_event_label_should_keep_known_events_and_call_the_rest_other() {
        for event in WEBHOOK_EVENTS {
            assert_eq!(webhook_event_label(event), event);
        }
        for event in ["", "star", "PUSH", "push ", "other", "unverified", "pushx"] {
            assert_eq!(webhook_event_label(event), OTHER_EVENT, "{event:?}");
        }
    }

    #[test]
    fn webhook_metric_should_not_grow_a_series_per_unknown_event_name() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        for i in 0..100 {
            metrics.webhook(&format!("evil-{i}"), "ignored");
        }
        let text = exposition(&registry);
        let series = text
            .lines()
            .filter(|l| l.starts_with("roster_webhooks_total{"))
            .count();
        assert_eq!(series, 1, "{text}");
        assert!(
            text.contains(r#"roster_webhooks_total{event="other",outcome="ignored"} 100"#),
            "{text}"
        );
    }

    #[test]
    fn holds_gauge_should_show_the_active_holds_without_labels() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.set_active_holds(2);
        let text = exposition(&registry);
        assert!(text.contains("\nroster_holds 2\n"), "{text}");
    }

    #[test]
    fn rate_limits_should_read_back_the_last_value_per_installation() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        assert!(metrics.rate_limits().is_empty());
        metrics.rate_limit_remaining(InstallationId(9), 100);
        metrics.rate_limit_remaining(InstallationId(3), 4000);
        metrics.rate_limit_remaining(InstallationId(9), 99);
        assert_eq!(
            metrics.rate_limits(),
            vec![(InstallationId(3), 4000), (InstallationId(9), 99)]
        );
    }

    #[test]
    fn repo_counts_should_drop_to_zero_for_statuses_that_disappeared() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.set_repo_counts(&BTreeMap::from([("synced".to_owned(), 3)]));
        metrics.set_repo_counts(&BTreeMap::from([("invalid".to_owned(), 1)]));

        let text = exposition(&registry);
        assert!(
            text.contains(r#"roster_repos{status="synced"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"roster_repos{status="invalid"} 1"#),
            "{text}"
        );
    }
}
