//! The controller's own metrics (docs/operations.md#metrics), registered by whoever builds it.

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Registers each metric into a `prometheus_client` registry under its
/// name and help, one line a metric, so that a registration reads as the
/// list of series it makes. `Registry::register` is generic over the
/// metric, which rules out a table walked by a loop. Each is [`Declared`]:
/// its `# HELP` and `# TYPE` show before its first series.
macro_rules! register_metrics {
    ($registry:expr; $($name:literal, $help:literal => $metric:expr;)+) => {
        $($registry.register($name, $help, $crate::controller::metrics::Declared($metric.clone()));)+
    };
}

/// A metric whose family is declared (`# HELP`, `# TYPE`) from the start.
/// `prometheus_client` leaves out a labelled family until its first series,
/// so an `absent()` alert could not tell "never happened" from "not
/// exported" (docs/operations.md#metrics).
#[derive(Debug, Clone)]
pub struct Declared<M>(pub M);

impl<M: EncodeMetric> EncodeMetric for Declared<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        self.0.metric_type()
    }

    fn is_empty(&self) -> bool {
        false
    }
}
pub(crate) use register_metrics;

/// Label of a reconcile's duration: its outcome (`synced`, `error`, …).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

/// Queue and reconcile metrics. Cloning shares the same series.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    /// Keys waiting or claimed, sampled from the queue.
    pub queue_depth: Gauge,
    /// Keys enqueued, whatever the trigger (listing, sweep, webhook, API).
    /// Triggers other than the listing enqueue straight into the queue, so
    /// the queue counts: hand this counter to it when building it.
    pub queue_adds: Counter,
    /// Failed attempts scheduled for a retry.
    pub queue_retries: Counter,
    pub reconcile_duration: Family<OutcomeLabel, Histogram>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self {
            queue_depth: Gauge::default(),
            queue_adds: Counter::default(),
            queue_retries: Counter::default(),
            reconcile_duration: Family::new_with_constructor(|| {
                Histogram::new([
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                ])
            }),
        }
    }
}

impl ControllerMetrics {
    /// Creates the metrics and registers them under `roster_`-less names;
    /// pass a registry with the prefix you want (`Registry::with_prefix`).
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        register_metrics!(registry;
            "queue_depth", "Keys waiting or being handled" => m.queue_depth;
            "queue_adds", "Keys enqueued" => m.queue_adds;
            "queue_retries", "Failed attempts scheduled for retry" => m.queue_retries;
            "reconcile_duration_seconds", "Time to reconcile one key, by outcome" => m.reconcile_duration;
        );
        m
    }

    pub fn observe(&self, outcome: &str, seconds: f64) {
        self.reconcile_duration
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_owned(),
            })
            .observe(seconds);
    }
}
