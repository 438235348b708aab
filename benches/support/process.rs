//! What the kernel says about this process (Linux `/proc`; zeros elsewhere): CPU time used and the
//! resident set's peak, which a bench resets before a row so that each row has its own peak.
//! CPU time, unlike wall time, does not grow when other work shares the machine.

use std::time::Duration;

/// CPU time (user + system) this process has used so far, every thread's, those that ended
/// included: the kernel's process CPU clock (`CLOCK_PROCESS_CPUTIME_ID`, nanoseconds), not
/// `/proc/self/stat`'s 10 ms ticks, which made ratios of slices of a few hundred ms jump by
/// several percent.
pub fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// A `kB` line of `/proc/self/status` (`VmHWM`), in bytes.
fn status_kb(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The resident set's peak since the process started or [`reset_peak_rss`] last ran.
pub fn peak_rss() -> usize {
    status_kb("VmHWM")
}

/// Resets the peak to the current resident set (`/proc/self/clear_refs`, value 5); where the
/// kernel refuses, the peak stays the process's.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Bytes as MiB, one decimal.
pub fn mib(b: usize) -> String {
    format!("{:.1} MiB", b as f64 / 1_048_576.0)
}
