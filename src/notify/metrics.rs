//! `roster_notify_backlog{target}`: changes not yet acknowledged by each
//! notification target.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    target: String,
}

/// The notifier's metrics; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct NotifyMetrics {
    backlog: Family<TargetLabels, Gauge>,
}

impl NotifyMetrics {
    /// Registers under `registry` (give it the `roster` prefix).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "notify_backlog",
            "Changes not yet acknowledged by a notification target",
            metrics.backlog.clone(),
        );
        metrics
    }

    pub fn set_backlog(&self, target: &str, backlog: i64) {
        self.backlog
            .get_or_create(&TargetLabels {
                target: target.to_owned(),
            })
            .set(backlog);
    }
}
