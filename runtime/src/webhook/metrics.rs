//! The webhook metrics, under controller-runtime's names, in the process registry
//! ([`crate::metrics`]): per-path latency, requests by HTTP code, requests in flight,
//! and recovered handler panics (admission and conversion, as Go counts them apart).
//!
//! As Go's `InstrumentedHook`: the latency histogram has the labels `webhook` and
//! `code` and Prometheus' default buckets, and registering a path creates its
//! `code="200"` and `code="500"` request counters at zero ([`register_path`]).

use std::sync::OnceLock;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts};

struct Metrics {
    latency: HistogramVec,
    total: IntCounterVec,
    in_flight: IntGaugeVec,
    panics: IntCounter,
    conversion_panics: IntCounter,
}

fn metrics() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(|| {
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "controller_runtime_webhook_latency_seconds",
                "Histogram of the latency of processing admission requests",
            ),
            &["webhook", "code"],
        )
        .expect("static metric definition is valid");
        let total = IntCounterVec::new(
            Opts::new(
                "controller_runtime_webhook_requests_total",
                "Total number of admission requests by HTTP status code.",
            ),
            &["webhook", "code"],
        )
        .expect("static metric definition is valid");
        let in_flight = IntGaugeVec::new(
            Opts::new(
                "controller_runtime_webhook_requests_in_flight",
                "Current number of admission requests being served.",
            ),
            &["webhook"],
        )
        .expect("static metric definition is valid");
        let panics = IntCounter::new(
            "controller_runtime_webhook_panics_total",
            "Total number of webhook panics",
        )
        .expect("static metric definition is valid");
        let conversion_panics = IntCounter::new(
            "controller_runtime_conversion_webhook_panics_total",
            "Total number of conversion webhook panics",
        )
        .expect("static metric definition is valid");
        let reg = crate::metrics::registry();
        let _ = reg.register(Box::new(conversion_panics.clone()));
        let _ = reg.register(Box::new(latency.clone()));
        let _ = reg.register(Box::new(total.clone()));
        let _ = reg.register(Box::new(in_flight.clone()));
        let _ = reg.register(Box::new(panics.clone()));
        Metrics {
            latency,
            total,
            in_flight,
            panics,
            conversion_panics,
        }
    })
}

/// Counts a recovered handler panic.
pub(crate) fn panic_observed() {
    metrics().panics.inc();
}

/// Counts a recovered panic of a conversion webhook.
pub(crate) fn conversion_panic_observed() {
    metrics().conversion_panics.inc();
}

/// Creates `path`'s most likely request counters, `code="200"` and `code="500"`, at
/// zero (Go's `InstrumentedHook`), so rate queries see the series before traffic.
pub(crate) fn register_path(path: &str) {
    let m = metrics();
    for code in ["200", "500"] {
        let _ = m.total.with_label_values(&[path, code]);
    }
}

/// Makes sure every webhook metric is registered (so a scrape shows them at zero).
pub(crate) fn init() {
    let _ = metrics();
}

/// Marks a request to `webhook` in flight until the guard is dropped.
pub(crate) struct InFlight(String);

impl InFlight {
    pub(crate) fn start(path: &str) -> Self {
        metrics().in_flight.with_label_values(&[path]).inc();
        InFlight(path.to_string())
    }

    /// Records the finished request's latency and code.
    pub(crate) fn done(&self, elapsed: Duration, code: u16) {
        let m = metrics();
        let code = code.to_string();
        let labels = [self.0.as_str(), code.as_str()];
        m.latency
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
        m.total.with_label_values(&labels).inc();
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics()
            .in_flight
            .with_label_values(&[self.0.as_str()])
            .dec();
    }
}
