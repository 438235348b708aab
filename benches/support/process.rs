//! What the kernel says about this process (Linux `/proc`; zeros elsewhere): CPU time used and the
//! resident set's peak, which a bench resets before a row so that each row has its own peak.
//! CPU time, unlike wall time, does not grow when other work shares the machine.

use std::time::Duration;

/// CPU time (user + system) this process has used so far, from `/proc/self/stat` (clock ticks of
/// 10 ms).
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
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
