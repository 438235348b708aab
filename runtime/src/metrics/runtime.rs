//! `tokio_*` metrics of the runtime the metrics server runs on: ctrl's counterparts of
//! the Go client's `go_*` runtime metrics, from tokio's stable
//! [`RuntimeMetrics`](tokio::runtime::RuntimeMetrics). Registered with the process
//! collector ([`super::process`]) when the metrics server's router is built.
//!
//! | ctrl | Go counterpart |
//! |---|---|
//! | `tokio_workers` | `go_sched_gomaxprocs_threads` (`GOMAXPROCS`) |
//! | `tokio_alive_tasks` | `go_goroutines` |
//! | `tokio_global_queue_depth` | (the global run queue; Go has no metric for it) |
//! | `tokio_worker_busy_seconds_total{worker}` | (time each worker spent running tasks; Go reports CPU time by class instead) |
//! | `tokio_worker_park_total{worker}` | (times each worker went idle) |

use std::sync::OnceLock;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{CounterVec, IntCounterVec, IntGauge, Opts};
use tokio::runtime::Handle;

/// Collects the `tokio_*` metrics of one runtime on each scrape.
pub struct RuntimeCollector {
    handle: Handle,
    workers: IntGauge,
    alive: IntGauge,
    global_queue: IntGauge,
    busy: CounterVec,
    parks: IntCounterVec,
    descs: Vec<Desc>,
}

impl std::fmt::Debug for RuntimeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeCollector").finish_non_exhaustive()
    }
}

fn int_gauge(name: &str, help: &str) -> IntGauge {
    IntGauge::with_opts(Opts::new(name, help)).expect("static gauge options are valid")
}

impl RuntimeCollector {
    /// A collector for the runtime of `handle`.
    pub fn new(handle: Handle) -> Self {
        let workers = int_gauge("tokio_workers", "Number of tokio worker threads.");
        let alive = int_gauge("tokio_alive_tasks", "Number of alive tokio tasks.");
        let global_queue = int_gauge(
            "tokio_global_queue_depth",
            "Number of tasks in the tokio runtime's global queue.",
        );
        let busy = CounterVec::new(
            Opts::new(
                "tokio_worker_busy_seconds_total",
                "Time each tokio worker spent running tasks.",
            ),
            &["worker"],
        )
        .expect("static counter options are valid");
        let parks = IntCounterVec::new(
            Opts::new(
                "tokio_worker_park_total",
                "Times each tokio worker parked (went idle).",
            ),
            &["worker"],
        )
        .expect("static counter options are valid");
        let descs = [
            &workers as &dyn Collector,
            &alive,
            &global_queue,
            &busy,
            &parks,
        ]
        .iter()
        .flat_map(|c| c.desc().into_iter().cloned())
        .collect();
        Self {
            handle,
            workers,
            alive,
            global_queue,
            busy,
            parks,
            descs,
        }
    }
}

impl Collector for RuntimeCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let m = self.handle.metrics();
        let n = m.num_workers();
        self.workers.set(i64::try_from(n).unwrap_or(i64::MAX));
        self.alive
            .set(i64::try_from(m.num_alive_tasks()).unwrap_or(i64::MAX));
        self.global_queue
            .set(i64::try_from(m.global_queue_depth()).unwrap_or(i64::MAX));
        for w in 0..n {
            let label = w.to_string();
            let busy = self.busy.with_label_values(&[label.as_str()]);
            let delta = m.worker_total_busy_duration(w).as_secs_f64() - busy.get();
            if delta > 0.0 {
                busy.inc_by(delta);
            }
            let parks = self.parks.with_label_values(&[label.as_str()]);
            let delta = m.worker_park_count(w).saturating_sub(parks.get());
            parks.inc_by(delta);
        }
        let mut out = Vec::new();
        out.extend(self.workers.collect());
        out.extend(self.alive.collect());
        out.extend(self.global_queue.collect());
        out.extend(self.busy.collect());
        out.extend(self.parks.collect());
        out
    }
}

/// Registers a collector for the current runtime in the process-wide registry, once
/// (a no-op outside a runtime).
pub fn register() {
    static DONE: OnceLock<()> = OnceLock::new();
    let Ok(handle) = Handle::try_current() else {
        return;
    };
    DONE.get_or_init(|| {
        if let Err(error) = super::registry().register(Box::new(RuntimeCollector::new(handle))) {
            tracing::debug!(%error, "tokio runtime collector not registered");
        }
    });
}
