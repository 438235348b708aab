//! Work-queue metrics: the [`MetricsProvider`] trait (client-go's `MetricsProvider`, with
//! controller-runtime's per-priority depth) and the Prometheus provider that registers
//! controller-runtime's metrics in [`crate::metrics::registry`].
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `workqueue_depth` | gauge | `name`, `controller`, `priority` |
//! | `workqueue_adds_total` | counter | `name`, `controller` |
//! | `workqueue_queue_duration_seconds` | histogram (1e-8 s × 10ⁿ, 12 buckets) | `name`, `controller` |
//! | `workqueue_work_duration_seconds` | histogram (same buckets) | `name`, `controller` |
//! | `workqueue_unfinished_work_seconds` | gauge | `name`, `controller` |
//! | `workqueue_longest_running_processor_seconds` | gauge | `name`, `controller` |
//! | `workqueue_retries_total` | counter | `name`, `controller` |
//!
//! Both `name` and `controller` carry the queue's name, as in controller-runtime. A queue
//! asks its provider once, at construction, for handles with the label values already
//! resolved; per operation it only touches those handles. A queue built without a
//! provider (or with an empty name, as in client-go) keeps no metric state at all.
//!
//! The unfinished-work gauges are refreshed every 500 ms by one background thread shared
//! by all queues of the process (no tokio runtime needed).
//!
//! Inside: the provider API here; [`clock`] (the timestamps queues take), `histogram`
//! (the duration buckets, batched observations and the lock-free histogram), `prometheus`
//! (the Prometheus provider), `queue` (one queue's resolved handles, [`QueueMetrics`]) and
//! `unfinished` (the process-wide thread refreshing the unfinished-work gauges).

mod clock;
mod histogram;
mod prometheus;
mod queue;
mod unfinished;

pub(crate) use clock::{duration_between, now_ticks, secs_between};
pub use histogram::{BucketCounts, DURATION_BUCKETS};
pub use prometheus::prometheus_metrics_provider;
pub(crate) use queue::QueueMetrics;
pub(crate) use unfinished::{UnfinishedWork, register_unfinished_work};

/// A counter handle (`workqueue.CounterMetric`).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Adds `n` (by default, `n` calls of [`CounterMetric::inc`]).
    fn inc_by(&self, n: u64) {
        for _ in 0..n {
            self.inc();
        }
    }
}

/// A gauge handle that moves by one (`workqueue.GaugeMetric`).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
    /// Adds `delta`, which may be negative (by default, that many calls of
    /// [`GaugeMetric::inc`] or [`GaugeMetric::dec`]).
    fn add(&self, delta: i64) {
        for _ in 0..delta.unsigned_abs() {
            if delta > 0 { self.inc() } else { self.dec() }
        }
    }
}

/// A gauge handle that is set (`workqueue.SettableGaugeMetric`).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, v: f64);
}

/// A histogram handle (`workqueue.HistogramMetric`).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, v: f64);
    /// Records a batch of duration observations already sorted into
    /// [`DURATION_BUCKETS`]: `counts[i]` observations no larger than bound `i` (and larger
    /// than bound `i - 1`), `counts[12]` larger than every bound; `sum` is their total in
    /// seconds. Queues call it only when their provider says [`MetricsProvider::batched`].
    /// The default observes each bucket's bound (the largest bound for `+Inf`) once per
    /// count, which keeps counts exact but not the sum: batched providers override it.
    fn observe_bucketed(&self, counts: &BucketCounts, sum: f64) {
        let _ = sum;
        for (i, &c) in counts.iter().enumerate() {
            let bound = DURATION_BUCKETS[i.min(DURATION_BUCKETS.len() - 1)];
            for _ in 0..c {
                self.observe(bound);
            }
        }
    }
}

/// How many priorities of one queue get their own `workqueue_depth` series
/// (controller-runtime's `maxRecommendedUniquePriorities`).
pub const MAX_RECOMMENDED_UNIQUE_PRIORITIES: usize = 25;

/// The `priority` label of the series past that limit.
pub const PRIORITY_CARDINALITY_EXCEEDED: &str = "exceeded_cardinality_limit";

/// Makes the metric handles of a named queue (client-go's `MetricsProvider` plus
/// controller-runtime's `MetricsProviderWithPriority`).
pub trait MetricsProvider: Send + Sync {
    /// The depth gauge of queue `name` for `priority` (`None` for queues without
    /// priorities; the Prometheus provider then uses the label value `""`).
    fn new_depth_metric(&self, name: &str, priority: Option<i32>) -> Box<dyn GaugeMetric>;
    /// The depth gauge of queue `name` for every priority past the first
    /// [`MAX_RECOMMENDED_UNIQUE_PRIORITIES`] (controller-runtime's
    /// `exceeded_cardinality_limit` series). Default: the gauge without priority.
    fn new_depth_metric_over_limit(&self, name: &str) -> Box<dyn GaugeMetric> {
        self.new_depth_metric(name, None)
    }
    /// The total number of adds.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Seconds an item waits in the queue before it is handed out.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Seconds between handing an item out and its `done`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Seconds of work in progress not yet observed by the work duration.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// Seconds the longest running item has been processed.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric>;
    /// The total number of retries (delayed or rate-limited adds).
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Whether queues may batch their updates: count adds, retries, depth changes and
    /// duration observations in plain integers under their lock and hand them over in one
    /// call each ([`CounterMetric::inc_by`], [`GaugeMetric::add`],
    /// [`HistogramMetric::observe_bucketed`]) before every collection of the metrics and
    /// every 500 ms, instead of one call per change. Only a provider whose readers always
    /// go through such a collection can say yes; the default is no (every change reaches
    /// the handles at once).
    fn batched(&self) -> bool {
        false
    }
}
