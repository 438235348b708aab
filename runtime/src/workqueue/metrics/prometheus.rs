//! The Prometheus provider: controller-runtime's workqueue metric families, registered
//! once per process in [`crate::metrics::registry`], and the handles it gives each queue.

use std::sync::{Arc, OnceLock};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts};

use super::histogram::HistogramCollector;
use super::unfinished::flush_all;
use super::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PRIORITY_CARDINALITY_EXCEEDED,
    SettableGaugeMetric,
};

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
