//! The queue and work duration histograms: controller-runtime's buckets, a queue's
//! [`DurationMetric`] (observations batched under the queue lock when the provider asks
//! for it), and the lock-free [`AtomicHistogram`] / [`HistogramCollector`] the Prometheus
//! provider serves them with.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};

use super::HistogramMetric;
use super::clock::{secs_between, secs_per_tick};

/// The upper bounds (seconds) of the queue and work duration histograms:
/// controller-runtime's `ExponentialBuckets(10e-9, 10, 12)`, 1e-8 s .. 1e3 s. Batched
/// observations ([`HistogramMetric::observe_bucketed`]) come as counts per bound, plus one
/// count for `+Inf`.
pub const DURATION_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

/// Counts per duration bucket: one per bound of [`DURATION_BUCKETS`], then `+Inf`.
pub type BucketCounts = [u64; 13];

/// The bucket bounds in clock ticks (nanoseconds), computed once: a batched observation finds its
/// bucket with a few integer comparisons, no float conversion.
fn bucket_ticks() -> &'static [u64; 12] {
    static TICKS: OnceLock<[u64; 12]> = OnceLock::new();
    TICKS.get_or_init(|| DURATION_BUCKETS.map(|b| (b / secs_per_tick()).round() as u64))
}

/// A queue's duration histogram handle and, for batched providers, the observations not
/// handed to it yet: plain counters kept under the queue lock, handed over by
/// [`QueueMetrics::flush`].
pub(super) struct DurationMetric {
    handle: Box<dyn HistogramMetric>,
    batched: bool,
    counts: BucketCounts,
    sum_ticks: u64,
}

impl DurationMetric {
    pub(super) fn new(handle: Box<dyn HistogramMetric>, batched: bool) -> Self {
        Self {
            handle,
            batched,
            counts: [0; 13],
            sum_ticks: 0,
        }
    }

    /// Records the duration between two [`now_ticks`] timestamps.
    pub(super) fn observe(&mut self, from: u64, to: u64) {
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
    pub(super) fn flush(&mut self) {
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
    pub(super) fn new(name: &str, help: &str) -> Self {
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

    pub(super) fn with_name(&self, queue: &str) -> Arc<AtomicHistogram> {
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
