//! `process_*` metrics read from `/proc/self` (the Go client's process collector),
//! registered in the [`registry`](super::registry) by the metrics server when it builds
//! its router, so a scrape shows them next to controller and work-queue metrics.
//!
//! A small hand-written collector rather than prometheus's `process` feature, which
//! would pull procfs and an old major version of rustix into the build. Off Linux
//! (no `/proc`) it reports nothing.

use std::fs;
use std::sync::OnceLock;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Gauge, Opts};

/// Clock ticks per second for `/proc/self/stat` times (`USER_HZ`, 100 on every
/// mainstream Linux architecture).
const CLK_TCK: f64 = 100.0;

/// Collects Go's `process_*` metrics on each scrape.
pub struct ProcessCollector {
    cpu: Counter,
    open_fds: Gauge,
    max_fds: Gauge,
    vm: Gauge,
    vm_max: Gauge,
    rss: Gauge,
    start: Gauge,
    descs: Vec<Desc>,
}

impl std::fmt::Debug for ProcessCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessCollector").finish_non_exhaustive()
    }
}

fn gauge(name: &str, help: &str) -> Gauge {
    Gauge::with_opts(Opts::new(name, help)).expect("static gauge options are valid")
}

impl ProcessCollector {
    /// A collector for this process.
    pub fn new() -> Self {
        let cpu = Counter::with_opts(Opts::new(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
        ))
        .expect("static counter options are valid");
        let open_fds = gauge("process_open_fds", "Number of open file descriptors.");
        let max_fds = gauge(
            "process_max_fds",
            "Maximum number of open file descriptors.",
        );
        let vm = gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
        );
        let vm_max = gauge(
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
        );
        let rss = gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
        );
        let start = gauge(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
        );
        let descs = [
            &cpu as &dyn Collector,
            &open_fds,
            &max_fds,
            &vm,
            &vm_max,
            &rss,
            &start,
        ]
        .iter()
        .flat_map(|c| c.desc().into_iter().cloned())
        .collect();
        Self {
            cpu,
            open_fds,
            max_fds,
            vm,
            vm_max,
            rss,
            start,
            descs,
        }
    }
}

impl Default for ProcessCollector {
    fn default() -> Self {
        Self::new()
    }
}

impl Collector for ProcessCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut out = Vec::new();
        if let Some(stat) = Stat::read() {
            let total = (stat.utime + stat.stime) / CLK_TCK;
            let past = self.cpu.get();
            if total > past {
                self.cpu.inc_by(total - past);
            }
            out.extend(self.cpu.collect());
            self.vm.set(stat.vsize);
            out.extend(self.vm.collect());
            if let Some(btime) = boot_time() {
                self.start.set(btime + stat.starttime / CLK_TCK);
                out.extend(self.start.collect());
            }
        }
        if let Some(rss) = status_kb("VmRSS:") {
            self.rss.set(rss * 1024.0);
            out.extend(self.rss.collect());
        }
        if let Ok(dir) = fs::read_dir("/proc/self/fd") {
            self.open_fds.set(dir.count() as f64);
            out.extend(self.open_fds.collect());
        }
        if let Some(max) = soft_limit("Max open files") {
            self.max_fds.set(max);
            out.extend(self.max_fds.collect());
        }
        if let Some(max) = soft_limit("Max address space") {
            self.vm_max.set(max);
            out.extend(self.vm_max.collect());
        }
        out
    }
}

/// Registers the collector in the process-wide registry, once.
pub fn register() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        if let Err(error) = super::registry().register(Box::new(ProcessCollector::new())) {
            tracing::debug!(%error, "process collector not registered");
        }
    });
}

struct Stat {
    utime: f64,
    stime: f64,
    starttime: f64,
    vsize: f64,
}

impl Stat {
    fn read() -> Option<Self> {
        let s = fs::read_to_string("/proc/self/stat").ok()?;
        // `comm` (field 2) may hold spaces and parens: fields restart after the last ')'.
        let rest = &s[s.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // f[0] is field 3 (state), so field n is f[n - 3].
        let field = |n: usize| f.get(n - 3)?.parse::<f64>().ok();
        Some(Self {
            utime: field(14)?,
            stime: field(15)?,
            starttime: field(22)?,
            vsize: field(23)?,
        })
    }
}

fn boot_time() -> Option<f64> {
    let s = fs::read_to_string("/proc/stat").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

fn status_kb(key: &str) -> Option<f64> {
    let s = fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find_map(|l| l.strip_prefix(key))?;
    line.split_whitespace().next()?.parse().ok()
}

/// The soft limit of a `/proc/self/limits` row; `unlimited` is Go's `RLIM_INFINITY`.
fn soft_limit(row: &str) -> Option<f64> {
    let s = fs::read_to_string("/proc/self/limits").ok()?;
    let rest = s.lines().find_map(|l| l.strip_prefix(row))?;
    match rest.split_whitespace().next()? {
        "unlimited" => Some(u64::MAX as f64),
        v => v.parse().ok(),
    }
}
