//! Controller metrics under controller-runtime's names and buckets
//! (`pkg/internal/controller/metrics`), registered once in
//! [`crate::metrics::registry`], labelled by controller name.

use std::sync::OnceLock;

use crate::workqueue::Triggers;
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
};

/// controller-runtime's `controller_runtime_reconcile_time_seconds` buckets.
pub const RECONCILE_TIME_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

struct Vecs {
    total: IntCounterVec,
    errors: IntCounterVec,
    terminal: IntCounterVec,
    panics: IntCounterVec,
    timeouts: IntCounterVec,
    time: HistogramVec,
    workers: IntGaugeVec,
    active: IntGaugeVec,
    triggers: IntCounterVec,
}

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("static metric definition is valid")
}

fn gauge(name: &str, help: &str) -> IntGaugeVec {
    IntGaugeVec::new(Opts::new(name, help), &["controller"])
        .expect("static metric definition is valid")
}

fn vecs() -> &'static Vecs {
    static VECS: OnceLock<Vecs> = OnceLock::new();
    VECS.get_or_init(|| {
        let c = ["controller"];
        let v = Vecs {
            total: counter(
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                &["controller", "result"],
            ),
            errors: counter(
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                &c,
            ),
            terminal: counter(
                "controller_runtime_terminal_reconcile_errors_total",
                "Total number of terminal reconciliation errors per controller",
                &c,
            ),
            panics: counter(
                "controller_runtime_reconcile_panics_total",
                "Total number of reconciliation panics per controller",
                &c,
            ),
            timeouts: counter(
                "controller_runtime_reconcile_timeouts_total",
                "Total number of reconciliation timeouts per controller",
                &c,
            ),
            time: HistogramVec::new(
                HistogramOpts::new(
                    "controller_runtime_reconcile_time_seconds",
                    "Length of time per reconciliation per controller",
                )
                .buckets(RECONCILE_TIME_BUCKETS.to_vec()),
                &c,
            )
            .expect("static metric definition is valid"),
            workers: gauge(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
            ),
            active: gauge(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
            ),
            triggers: counter(
                "controller_runtime_reconcile_triggers_total",
                "Total number of reconcile triggers per controller, source and event",
                &["controller", "source", "event"],
            ),
        };
        let reg = crate::metrics::registry();
        let all: [Box<dyn prometheus::core::Collector>; 9] = [
            Box::new(v.total.clone()),
            Box::new(v.errors.clone()),
            Box::new(v.terminal.clone()),
            Box::new(v.panics.clone()),
            Box::new(v.timeouts.clone()),
            Box::new(v.time.clone()),
            Box::new(v.workers.clone()),
            Box::new(v.active.clone()),
            Box::new(v.triggers.clone()),
        ];
        for m in all {
            if let Err(error) = reg.register(m) {
                tracing::warn!(%error, "could not register a controller metric");
            }
        }
        v
    })
}

/// One controller's metric series, resolved once so the hot path does no label lookups.
pub(crate) struct ControllerMetrics {
    pub(crate) success: IntCounter,
    pub(crate) error: IntCounter,
    pub(crate) requeue: IntCounter,
    pub(crate) requeue_after: IntCounter,
    pub(crate) errors: IntCounter,
    pub(crate) terminal_errors: IntCounter,
    pub(crate) panics: IntCounter,
    pub(crate) timeouts: IntCounter,
    pub(crate) time: prometheus::Histogram,
    pub(crate) workers: IntGauge,
    pub(crate) active: IntGauge,
    name: String,
}

impl ControllerMetrics {
    /// The series for controller `name` (created at 0, so they show from the start).
    pub(crate) fn new(name: &str) -> Self {
        let v = vecs();
        let total = |r: &str| v.total.with_label_values(&[name, r]);
        Self {
            success: total("success"),
            error: total("error"),
            requeue: total("requeue"),
            requeue_after: total("requeue_after"),
            errors: v.errors.with_label_values(&[name]),
            terminal_errors: v.terminal.with_label_values(&[name]),
            panics: v.panics.with_label_values(&[name]),
            timeouts: v.timeouts.with_label_values(&[name]),
            time: v.time.with_label_values(&[name]),
            workers: v.workers.with_label_values(&[name]),
            active: v.active.with_label_values(&[name]),
            name: name.to_string(),
        }
    }

    /// Counts each distinct trigger of one reconcile in
    /// `controller_runtime_reconcile_triggers_total` (ctrl's own metric).
    pub(crate) fn count_triggers(&self, triggers: &Triggers) {
        let v = &vecs().triggers;
        for t in triggers {
            let labels = [self.name.as_str(), t.origin.as_str(), t.event.as_str()];
            v.with_label_values(&labels).inc();
        }
    }

    /// Go's `initMetrics`: the worker gauge to `max`, active workers to 0.
    pub(crate) fn init(&self, max_concurrent_reconciles: usize) {
        self.workers
            .set(i64::try_from(max_concurrent_reconciles).unwrap_or(i64::MAX));
        self.active.set(0);
    }
}
