//! `roster_notify_backlog{target}`: changes not yet acknowledged by each
//! notification target; `roster_notify_stalled{target}`: 1 while a target
//! that fell too far behind waits for its `gap` notification.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::controller::register_metrics;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TargetLabels {
    target: String,
}

/// The notifier's metrics; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct NotifyMetrics {
    backlog: Family<TargetLabels, Gauge>,
    stalled: Family<TargetLabels, Gauge>,
}

impl NotifyMetrics {
    /// Registers under `registry` (give it the `roster` prefix).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        register_metrics!(registry;
            "notify_backlog", "Changes not yet acknowledged by a notification target" => metrics.backlog;
            "notify_stalled", "1 while a notification target fell more than the change log's size bound \
                behind and has not been sent its gap notification" => metrics.stalled;
        );
        metrics
    }

    /// Whether `target` is stalled (its `gap` notification not yet acknowledged).
    pub fn set_stalled(&self, target: &str, stalled: bool) {
        self.stalled
            .get_or_create(&TargetLabels {
                target: target.to_owned(),
            })
            .set(i64::from(stalled));
    }

    pub fn set_backlog(&self, target: &str, backlog: i64) {
        self.backlog
            .get_or_create(&TargetLabels {
                target: target.to_owned(),
            })
            .set(backlog);
    }
}
