//! The back-off of every watch ctrl runs (informers, the leader-election observer, the
//! sharder's views): kube's `DefaultBackoff` — 800 ms doubling to 30 s, jittered, reset after
//! 120 s without an error (`kube-runtime/src/watcher.rs`) — with its jitter drawn from
//! [`ctrl_clock`] and its reset timer on tokio's clock, so that a simulation (seeded, paused
//! clock) replays it. kube's own draws from `fastrand` and resets on the system clock.

use std::time::Duration;

use tokio::time::Instant;

/// kube's default watch back-off, on ctrl's clock; use it with `WatchStreamExt::backoff`.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
    last: Option<Instant>,
}

/// The first delay, the longest, and the quiet time after which the delay starts over.
const MIN: Duration = Duration::from_millis(800);
const MAX: Duration = Duration::from_secs(30);
const RESET_AFTER: Duration = Duration::from_secs(120);

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff {
            next: MIN,
            last: None,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    /// The next delay: the current step plus up to one minimum delay of jitter (backon's
    /// jitter, which kube's uses), then the step doubles up to the maximum.
    fn next(&mut self) -> Option<Duration> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|at| now.duration_since(at) > RESET_AFTER)
        {
            self.next = MIN;
        }
        self.last = Some(now);
        let delay = self.next + MIN.mul_f64(ctrl_clock::random_f64());
        self.next = (self.next * 2).min(MAX);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = MIN;
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_to_thirty_seconds_and_starts_over_after_two_quiet_minutes() {
        let clock = ctrl_clock::Clock::fake_seeded(ctrl_clock::Timestamp::UNIX_EPOCH, 1);
        let _g = clock.enter();
        let mut b = WatchBackoff::default();
        let steps: Vec<Duration> = (0..8).filter_map(|_| b.next()).collect();
        let floors = [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000];
        for (d, floor) in steps.iter().zip(floors) {
            let floor = Duration::from_millis(floor);
            assert!(*d >= floor && *d < floor + MIN, "{d:?} vs {floor:?}");
        }
        tokio::time::advance(RESET_AFTER + Duration::from_secs(1)).await;
        assert!(b.next().is_some_and(|d| d < MIN * 2));
    }
}
