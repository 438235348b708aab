//! The timestamps the queues take for their metrics: nanoseconds of the monotonic clock
//! (`std::time::Instant`) since the first one taken, as plain `u64`s that fit in the queues'
//! atomics, converted to seconds only when a duration is observed. (This was `quanta`'s raw
//! TSC ticks, ~17 ns cheaper a read; `Instant` is vDSO `clock_gettime` and saves its crates,
//! ~2 CPU-seconds of an operator's cold build.)

use std::sync::OnceLock;
use std::time::Instant;

/// The instant timestamps count from: the first [`now_ticks`] of the process.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// A metrics timestamp: nanoseconds since [`base`], plus one, so never 0 (0 means "not
/// set"). A `u64` of nanoseconds lasts 584 years.
pub(crate) fn now_ticks() -> u64 {
    let since = base().elapsed().as_nanos();
    u64::try_from(since).unwrap_or(u64::MAX - 1) + 1
}

/// Seconds per tick: a tick is a nanosecond.
pub(super) fn secs_per_tick() -> f64 {
    1e-9
}

/// Seconds between two [`now_ticks`] timestamps.
pub(crate) fn secs_between(from: u64, to: u64) -> f64 {
    if to <= from {
        return 0.0;
    }
    (to - from) as f64 * secs_per_tick()
}

/// The time between two [`now_ticks`] timestamps as a `Duration` (zero if `to` is not
/// after `from`): integer nanoseconds, no float conversion.
pub(crate) fn duration_between(from: u64, to: u64) -> std::time::Duration {
    std::time::Duration::from_nanos(to.saturating_sub(from))
}
