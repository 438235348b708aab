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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts};

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A metrics timestamp: raw TSC ticks read through `quanta` (about 11 ns here, against
/// 28 ns for `Instant::now`). Never 0 (0 means "not set").
pub(crate) fn now_ns() -> u64 {
    clock().raw().max(1)
}

/// Seconds per raw clock tick, measured once: `quanta`'s own conversion costs a scaled
/// multiply of both timestamps per call, this is one subtraction and one multiply.
fn secs_per_tick() -> f64 {
    static SCALE: OnceLock<f64> = OnceLock::new();
    *SCALE.get_or_init(|| {
        const SPAN: u64 = 1 << 40;
        clock().delta_as_nanos(0, SPAN) as f64 / SPAN as f64 / 1e9
    })
}

/// Seconds between two [`now_ns`] timestamps.
pub(crate) fn secs_between(from: u64, to: u64) -> f64 {
    if to <= from {
        return 0.0;
    }
    (to - from) as f64 * secs_per_tick()
}

/// The upper bounds (seconds) of the queue and work duration histograms:
/// controller-runtime's `ExponentialBuckets(10e-9, 10, 12)`, 1e-8 s .. 1e3 s. Batched
/// observations ([`HistogramMetric::observe_bucketed`]) come as counts per bound, plus one
/// count for `+Inf`.
pub const DURATION_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

/// Counts per duration bucket: one per bound of [`DURATION_BUCKETS`], then `+Inf`.
pub type BucketCounts = [u64; 13];

/// The bucket bounds in raw clock ticks, measured once: a batched observation finds its
/// bucket with a few integer comparisons, no float conversion.
fn bucket_ticks() -> &'static [u64; 12] {
    static TICKS: OnceLock<[u64; 12]> = OnceLock::new();
    TICKS.get_or_init(|| DURATION_BUCKETS.map(|b| (b / secs_per_tick()) as u64))
}

/// A queue's duration histogram handle and, for batched providers, the observations not
/// handed to it yet: plain counters kept under the queue lock, handed over by
/// [`QueueMetrics::flush`].
struct DurationMetric {
    handle: Box<dyn HistogramMetric>,
    batched: bool,
    counts: BucketCounts,
    sum_ticks: u64,
}

impl DurationMetric {
    fn new(handle: Box<dyn HistogramMetric>, batched: bool) -> Self {
        Self {
            handle,
            batched,
            counts: [0; 13],
            sum_ticks: 0,
        }
    }

    /// Records the duration between two [`now_ns`] timestamps.
    fn observe(&mut self, from: u64, to: u64) {
        if !self.batched {
            self.handle.observe(secs_between(from, to));
            return;
        }
        let d = to.saturating_sub(from);
        // Durations are mostly short: scanning from the smallest bound takes a few steps.
        let idx = bucket_ticks()
            .iter()
            .position(|&b| d <= b)
            .unwrap_or(DURATION_BUCKETS.len());
        self.counts[idx] += 1;
        self.sum_ticks = self.sum_ticks.saturating_add(d);
    }

    /// Hands the pending observations to the handle and clears them.
    fn flush(&mut self) {
        if self.counts.iter().any(|&c| c > 0) {
            let sum = self.sum_ticks as f64 * secs_per_tick();
            self.handle.observe_bucketed(&self.counts, sum);
            self.counts = [0; 13];
            self.sum_ticks = 0;
        }
    }
}

/// A lock-free histogram over [`DURATION_BUCKETS`]: one relaxed `fetch_add` on the bucket and
/// one on the sum (in nanoseconds) per observation, against the four atomic updates and
/// float CAS loop of `prometheus::Histogram`; a batch adds each non-empty bucket once.
/// Read by [`HistogramCollector`] at scrape.
#[derive(Default)]
pub(crate) struct AtomicHistogram {
    /// Non-cumulative counts; the last one is `+Inf`.
    buckets: [AtomicU64; 13],
    sum_ns: AtomicU64,
}

impl AtomicHistogram {
    fn observe_secs(&self, v: f64) {
        // The buckets are 10 ns × 10ⁿ: the index is a base-10 logarithm of the whole
        // nanoseconds, rounded up (so `v <= bound` holds as with a float comparison).
        let ns = if v > 0.0 { (v * 1e9).ceil() as u64 } else { 0 };
        let idx = if ns <= 10 {
            0
        } else {
            ((ns - 1).ilog10() as usize).min(DURATION_BUCKETS.len())
        };
        self.buckets[idx].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn observe_counts(&self, counts: &BucketCounts, sum: f64) {
        for (b, &c) in self.buckets.iter().zip(counts) {
            if c > 0 {
                b.fetch_add(c, Ordering::Relaxed);
            }
        }
        let ns = if sum > 0.0 {
            (sum * 1e9).round() as u64
        } else {
            0
        };
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn snapshot(&self) -> proto::Histogram {
        let mut h = proto::Histogram::default();
        let mut cumulative = 0u64;
        let mut buckets = Vec::with_capacity(DURATION_BUCKETS.len());
        for (i, bound) in DURATION_BUCKETS.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let mut b = proto::Bucket::default();
            b.set_upper_bound(*bound);
            b.set_cumulative_count(cumulative);
            buckets.push(b);
        }
        cumulative += self.buckets[DURATION_BUCKETS.len()].load(Ordering::Relaxed);
        h.set_bucket(buckets);
        h.set_sample_count(cumulative);
        h.set_sample_sum(self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9);
        h
    }
}

impl HistogramMetric for Arc<AtomicHistogram> {
    fn observe(&self, v: f64) {
        self.observe_secs(v)
    }
    fn observe_bucketed(&self, counts: &BucketCounts, sum: f64) {
        self.observe_counts(counts, sum)
    }
}

/// A histogram family with labels `name` and `controller` (both the queue name), one
/// [`AtomicHistogram`] per queue name; queues with the same name share one series, as
/// with a `HistogramVec`.
pub(crate) struct HistogramCollector {
    desc: Desc,
    series: Mutex<BTreeMap<String, Arc<AtomicHistogram>>>,
}

impl HistogramCollector {
    fn new(name: &str, help: &str) -> Self {
        let desc = Desc::new(
            name.to_string(),
            help.to_string(),
            vec!["name".to_string(), "controller".to_string()],
            Default::default(),
        )
        .expect("static metric definition is valid");
        Self {
            desc,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    fn with_name(&self, queue: &str) -> Arc<AtomicHistogram> {
        Arc::clone(self.series.lock().entry(queue.to_string()).or_default())
    }
}

impl Collector for HistogramCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let series = self.series.lock();
        let mut fam = MetricFamily::default();
        fam.set_name(self.desc.fq_name.clone());
        fam.set_help(self.desc.help.clone());
        fam.set_field_type(MetricType::HISTOGRAM);
        for (queue, h) in series.iter() {
            let mut m = proto::Metric::default();
            let label = |k: &str| {
                let mut l = LabelPair::default();
                l.set_name(k.to_string());
                l.set_value(queue.clone());
                l
            };
            m.set_label(vec![label("controller"), label("name")]);
            m.set_histogram(h.snapshot());
            fam.mut_metric().push(m);
        }
        vec![fam]
    }
}

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

struct PromVecs {
    depth: IntGaugeVec,
    adds: IntCounterVec,
    latency: Arc<HistogramCollector>,
    work_duration: Arc<HistogramCollector>,
    unfinished: GaugeVec,
    longest: GaugeVec,
    retries: IntCounterVec,
}

fn prom_vecs() -> &'static PromVecs {
    static VECS: OnceLock<PromVecs> = OnceLock::new();
    VECS.get_or_init(|| {
        let nc = ["name", "controller"];
        let vecs = PromVecs {
            depth: IntGaugeVec::new(
                Opts::new("depth", "Current depth of workqueue by workqueue and priority").subsystem("workqueue"),
                &["name", "controller", "priority"],
            )
            .expect("static metric definition is valid"),
            adds: IntCounterVec::new(
                Opts::new("adds_total", "Total number of adds handled by workqueue").subsystem("workqueue"),
                &nc,
            )
            .expect("static metric definition is valid"),
            latency: Arc::new(HistogramCollector::new(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
            )),
            work_duration: Arc::new(HistogramCollector::new(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes.",
            )),
            unfinished: GaugeVec::new(
                Opts::new(
                    "unfinished_work_seconds",
                    "How many seconds of work has been done that is in progress and hasn't been observed by \
                     work_duration. Large values indicate stuck threads. One can deduce the number of stuck \
                     threads by observing the rate at which this increases.",
                )
                .subsystem("workqueue"),
                &nc,
            )
            .expect("static metric definition is valid"),
            longest: GaugeVec::new(
                Opts::new(
                    "longest_running_processor_seconds",
                    "How many seconds has the longest running processor for workqueue been running.",
                )
                .subsystem("workqueue"),
                &nc,
            )
            .expect("static metric definition is valid"),
            retries: IntCounterVec::new(
                Opts::new("retries_total", "Total number of retries handled by workqueue").subsystem("workqueue"),
                &nc,
            )
            .expect("static metric definition is valid"),
        };
        let reg = crate::metrics::registry();
        let collectors: [Box<dyn prometheus::core::Collector>; 7] = [
            Box::new(Flushing(vecs.depth.clone())),
            Box::new(Flushing(vecs.adds.clone())),
            Box::new(Flushing(SharedCollector(Arc::clone(&vecs.latency)))),
            Box::new(Flushing(SharedCollector(Arc::clone(&vecs.work_duration)))),
            Box::new(vecs.unfinished.clone()),
            Box::new(vecs.longest.clone()),
            Box::new(Flushing(vecs.retries.clone())),
        ];
        for c in collectors {
            if let Err(err) = reg.register(c) {
                tracing::error!(%err, "registering a workqueue metric failed");
            }
        }
        vecs
    })
}

/// A collector of batched metrics: hands every queue's pending updates to the handles
/// before it is collected, so what is read is exact.
struct Flushing<C>(C);

impl<C: Collector> Collector for Flushing<C> {
    fn desc(&self) -> Vec<&Desc> {
        self.0.desc()
    }
    fn collect(&self) -> Vec<MetricFamily> {
        flush_all();
        self.0.collect()
    }
}

/// Registers an `Arc`'d collector (the registry wants a `Box<dyn Collector>`).
struct SharedCollector(Arc<HistogramCollector>);

impl Collector for SharedCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.0.desc()
    }
    fn collect(&self) -> Vec<MetricFamily> {
        self.0.collect()
    }
}

struct PrometheusProvider;

/// The Prometheus provider with controller-runtime's metric names, registered in
/// [`crate::metrics::registry`] on first use (once per process; calling this again
/// returns the same provider).
pub fn prometheus_metrics_provider() -> Arc<dyn MetricsProvider> {
    static PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            prom_vecs();
            Arc::new(PrometheusProvider)
        })
        .clone()
}

impl CounterMetric for prometheus::IntCounter {
    fn inc(&self) {
        prometheus::IntCounter::inc(self)
    }
    fn inc_by(&self, n: u64) {
        prometheus::IntCounter::inc_by(self, n)
    }
}
impl GaugeMetric for prometheus::IntGauge {
    fn inc(&self) {
        prometheus::IntGauge::inc(self)
    }
    fn dec(&self) {
        prometheus::IntGauge::dec(self)
    }
    fn add(&self, delta: i64) {
        prometheus::IntGauge::add(self, delta)
    }
}
impl SettableGaugeMetric for prometheus::Gauge {
    fn set(&self, v: f64) {
        prometheus::Gauge::set(self, v)
    }
}

impl MetricsProvider for PrometheusProvider {
    fn new_depth_metric(&self, name: &str, priority: Option<i32>) -> Box<dyn GaugeMetric> {
        let p = priority.map(|p| p.to_string()).unwrap_or_default();
        Box::new(
            prom_vecs()
                .depth
                .with_label_values(&[name, name, p.as_str()]),
        )
    }
    fn new_depth_metric_over_limit(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(
            prom_vecs()
                .depth
                .with_label_values(&[name, name, PRIORITY_CARDINALITY_EXCEEDED]),
        )
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(prom_vecs().adds.with_label_values(&[name, name]))
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(prom_vecs().latency.with_name(name))
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(prom_vecs().work_duration.with_name(name))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(prom_vecs().unfinished.with_label_values(&[name, name]))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(prom_vecs().longest.with_label_values(&[name, name]))
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(prom_vecs().retries.with_label_values(&[name, name]))
    }
    fn batched(&self) -> bool {
        // Every read goes through `Registry::gather`, and the three batched families are
        // registered behind `Flushing`, which flushes every queue first.
        true
    }
}

/// The resolved handles of one queue. Queues keep an `Option<QueueMetrics>`: `None` costs
/// nothing per operation.
pub(crate) struct QueueMetrics {
    provider: Arc<dyn MetricsProvider>,
    name: String,
    priority_aware: bool,
    /// Depth gauges by priority, resolved on first use; at most
    /// [`MAX_RECOMMENDED_UNIQUE_PRIORITIES`], later priorities share `depth_over_limit`.
    depth: Vec<(i32, Box<dyn GaugeMetric>)>,
    /// The `exceeded_cardinality_limit` gauge, once needed.
    depth_over_limit: Option<Box<dyn GaugeMetric>>,
    /// Whether `adds`, `retries` and `depth` updates are batched (see
    /// [`MetricsProvider::batched`]).
    batched: bool,
    /// Batched updates not handed over yet.
    pending_adds: u64,
    pending_retries: u64,
    pending_depth: Vec<(i32, i64)>,
    pub(crate) adds: Box<dyn CounterMetric>,
    latency: DurationMetric,
    work_duration: DurationMetric,
    pub(crate) unfinished: Box<dyn SettableGaugeMetric>,
    pub(crate) longest: Box<dyn SettableGaugeMetric>,
    pub(crate) retries: Box<dyn CounterMetric>,
}

impl QueueMetrics {
    /// Resolves every handle of queue `name`; `None` when `name` is empty (client-go).
    pub(crate) fn new(
        provider: Option<Arc<dyn MetricsProvider>>,
        name: &str,
        priority_aware: bool,
    ) -> Option<Self> {
        let provider = provider?;
        if name.is_empty() {
            return None;
        }
        let first = provider.new_depth_metric(name, priority_aware.then_some(0));
        let batched = provider.batched();
        Some(Self {
            depth: vec![(0, first)],
            depth_over_limit: None,
            batched,
            pending_adds: 0,
            pending_retries: 0,
            pending_depth: Vec::new(),
            adds: provider.new_adds_metric(name),
            latency: DurationMetric::new(provider.new_latency_metric(name), batched),
            work_duration: DurationMetric::new(provider.new_work_duration_metric(name), batched),
            unfinished: provider.new_unfinished_work_seconds_metric(name),
            longest: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
            name: name.to_string(),
            priority_aware,
            provider,
        })
    }

    /// An item became queued at `priority`: one more add, one more in depth.
    pub(crate) fn note_add(&mut self, priority: i32) {
        if self.batched {
            self.pending_adds += 1;
        } else {
            self.adds.inc();
        }
        self.note_depth(priority, 1);
    }

    /// One more retry.
    pub(crate) fn note_retry(&mut self) {
        if self.batched {
            self.pending_retries += 1;
        } else {
            self.retries.inc();
        }
    }

    /// The depth at `priority` changed by `delta`.
    pub(crate) fn note_depth(&mut self, priority: i32, delta: i64) {
        if !self.batched {
            self.depth(priority).add(delta);
            return;
        }
        let priority = if self.priority_aware { priority } else { 0 };
        match self.pending_depth.iter_mut().find(|(p, _)| *p == priority) {
            Some((_, d)) => *d += delta,
            None => self.pending_depth.push((priority, delta)),
        }
    }

    /// An item queued at `from` was handed out at `to` ([`now_ns`] timestamps).
    pub(crate) fn note_latency(&mut self, from: u64, to: u64) {
        self.latency.observe(from, to);
    }

    /// An item handed out at `from` was done at `to` ([`now_ns`] timestamps).
    pub(crate) fn note_work(&mut self, from: u64, to: u64) {
        self.work_duration.observe(from, to);
    }

    /// Hands the batched updates to the handles.
    pub(crate) fn flush(&mut self) {
        self.latency.flush();
        self.work_duration.flush();
        if self.pending_adds > 0 {
            self.adds.inc_by(std::mem::take(&mut self.pending_adds));
        }
        if self.pending_retries > 0 {
            self.retries
                .inc_by(std::mem::take(&mut self.pending_retries));
        }
        for i in 0..self.pending_depth.len() {
            let (p, d) = self.pending_depth[i];
            self.pending_depth[i].1 = 0;
            // Resolved even for a net change of 0: a priority once used has its series.
            let gauge = self.depth(p);
            if d != 0 {
                gauge.add(d);
            }
        }
    }

    /// The depth gauge for `priority` (always the single one on plain queues). The
    /// first [`MAX_RECOMMENDED_UNIQUE_PRIORITIES`] priorities seen get their own
    /// series, later ones share `priority="exceeded_cardinality_limit"` (Go switches
    /// every priority to it then; keeping the first ones keeps each series' adds and
    /// removals on the same gauge).
    pub(crate) fn depth(&mut self, priority: i32) -> &dyn GaugeMetric {
        let priority = if self.priority_aware { priority } else { 0 };
        let pos = match self.depth.iter().position(|(p, _)| *p == priority) {
            Some(pos) => pos,
            None if self.depth.len() >= MAX_RECOMMENDED_UNIQUE_PRIORITIES => {
                let (provider, name) = (&self.provider, &self.name);
                return &**self
                    .depth_over_limit
                    .get_or_insert_with(|| provider.new_depth_metric_over_limit(name));
            }
            None => {
                let g = self.provider.new_depth_metric(&self.name, Some(priority));
                self.depth.push((priority, g));
                self.depth.len() - 1
            }
        };
        &*self.depth[pos].1
    }
}

impl Drop for QueueMetrics {
    fn drop(&mut self) {
        // Batched updates must not be lost with the queue.
        self.flush();
    }
}

/// Something whose unfinished-work gauges need refreshing every 500 ms.
pub(crate) trait UnfinishedWork: Send + Sync {
    /// Recomputes and sets the unfinished-work and longest-running gauges.
    fn update_unfinished_work(&self, now: Instant);
    /// Hands batched metric updates to their handles.
    fn flush_metrics(&self);
}

/// The queues the updater thread refreshes.
type Registered = Arc<Mutex<Vec<Weak<dyn UnfinishedWork>>>>;

/// Every queue with metrics, weakly.
static QUEUES: OnceLock<Registered> = OnceLock::new();

/// Hands every live queue's batched metric updates to their handles.
fn flush_all() {
    let Some(queues) = QUEUES.get() else { return };
    let live: Vec<Arc<dyn UnfinishedWork>> =
        queues.lock().iter().filter_map(Weak::upgrade).collect();
    for q in live {
        q.flush_metrics();
    }
}

/// Registers `q` with the process-wide updater thread (started on first use). The thread
/// holds only a weak reference: dropped queues are forgotten on the next tick.
pub(crate) fn register_unfinished_work(q: Weak<dyn UnfinishedWork>) {
    let queues = QUEUES.get_or_init(|| {
        let queues: Registered = Arc::default();
        let for_thread = Arc::clone(&queues);
        let spawned = std::thread::Builder::new()
            .name("ctrl-workqueue-metrics".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(500));
                    let live: Vec<Arc<dyn UnfinishedWork>> = {
                        let mut qs = for_thread.lock();
                        qs.retain(|w| w.strong_count() > 0);
                        qs.iter().filter_map(Weak::upgrade).collect()
                    };
                    let now = Instant::now();
                    for q in live {
                        q.flush_metrics();
                        q.update_unfinished_work(now);
                    }
                }
            });
        if let Err(err) = spawned {
            tracing::error!(%err, "starting the workqueue metrics thread failed");
        }
        queues
    });
    queues.lock().push(q);
}
