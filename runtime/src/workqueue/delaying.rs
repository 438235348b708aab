//! Delays: the deadline heap and the one timer task per queue that moves items into the
//! queue when their time comes (client-go's `delaying_queue.go`).
//!
//! A queue keeps, under its own lock, a [`DelayHeap`]: slot numbers bucketed by 250 µs tick
//! (deadlines rounded up, so never early). The slot itself remembers the tick of its
//! earliest pending deadline, so a delay for the same key that falls in that tick or later
//! is ignored and one that falls earlier wins (stale bucket entries are skipped when their
//! tick comes up). The timer task sleeps until the earliest deadline and is woken early
//! only when an add brings a deadline earlier than the one it sleeps towards.
//!
//! **Runtime:** the timer task is started on the first positive delay, on the current
//! tokio runtime if there is one (so `tokio::time::pause` drives it in tests), otherwise on
//! a small dedicated thread running its own current-thread runtime. Nothing else in the
//! queues needs tokio: `add`, `done` and friends are plain synchronous calls, and `get` is
//! a future that any executor can poll.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The heap's resolution: deadlines are rounded **up** to whole ticks, so an item is
/// never ready early. tokio's timer wakes the task on whole milliseconds of its own clock;
/// a tick finer than that keeps the two roundings from adding up (with 1 ms ticks on a
/// grid offset from tokio's, an item was up to 2 ms late, 1 ms on average; now at most
/// 1.25 ms, about 0.6 ms on average), while still batching the items of one wake-up.
const TICK: Duration = Duration::from_micros(250);
/// [`TICK`] in nanoseconds.
const TICK_NS: u64 = TICK.as_nanos() as u64;

/// Pending deadlines of one queue, bucketed by tick: adding is a push onto the tick's
/// vector and firing takes a whole tick at once (no per-item heap sifting).
pub(crate) struct DelayHeap {
    base: Instant,
    ticks: BTreeMap<u64, Vec<u32>>,
    draining: Option<(u64, std::vec::IntoIter<u32>)>,
    /// The tick the timer task will wake up at (at the latest), `None` if it sleeps until
    /// woken.
    timer_next: Option<u64>,
    /// Whether the timer task was started.
    pub(crate) started: bool,
}

impl DelayHeap {
    pub(crate) fn new() -> Self {
        Self {
            base: Instant::now(),
            ticks: BTreeMap::new(),
            draining: None,
            timer_next: None,
            started: false,
        }
    }

    /// The tick a deadline falls in (rounded up, and at least 1, so a slot stores its
    /// deadline in 8 bytes with `None` free). In `u64` nanoseconds (584 years): a `u128`
    /// division is a library call, this one a multiply by a constant.
    pub(crate) fn tick_of(&self, at: Instant) -> NonZeroU64 {
        let d = at.saturating_duration_since(self.base);
        let ns = d
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()));
        NonZeroU64::new(ns.div_ceil(TICK_NS)).unwrap_or(NonZeroU64::MIN)
    }

    fn deadline(&self, tick: u64) -> Instant {
        // Saturates at ~584 years; `checked_add` fails only past the platform's limit.
        let d = Duration::from_nanos(tick.saturating_mul(TICK_NS));
        self.base
            .checked_add(d)
            .unwrap_or_else(|| self.base + Duration::from_secs(100 * 365 * 86_400))
    }

    /// Records that slot `idx` is due in `tick` (see [`Self::tick_of`]); returns whether the
    /// timer must be woken (the new deadline is earlier than what it sleeps towards).
    pub(crate) fn push(&mut self, tick: NonZeroU64, idx: u32) -> bool {
        let tick = tick.get();
        self.ticks.entry(tick).or_default().push(idx);
        let wake = self.timer_next.is_none_or(|n| tick < n);
        if wake {
            self.timer_next = Some(tick);
        }
        wake
    }

    /// Pops the next slot whose tick is due at `now`, with that tick. The caller checks
    /// that the slot's own deadline still falls in that tick (else the entry is stale).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(u64, u32)> {
        loop {
            if let Some((tick, it)) = &mut self.draining {
                if let Some(idx) = it.next() {
                    return Some((*tick, idx));
                }
                self.draining = None;
            }
            let (&tick, _) = self.ticks.first_key_value()?;
            if self.deadline(tick) > now {
                return None;
            }
            let (tick, v) = self.ticks.pop_first()?;
            self.draining = Some((tick, v.into_iter()));
        }
    }

    /// Sets and returns the deadline the timer task sleeps towards next.
    pub(crate) fn arm(&mut self) -> Option<Instant> {
        self.timer_next = self.ticks.first_key_value().map(|(t, _)| *t);
        self.timer_next.map(|t| self.deadline(t))
    }

    /// Drops every pending deadline (on shutdown).
    pub(crate) fn clear(&mut self) {
        self.ticks = BTreeMap::new();
        self.draining = None;
        self.timer_next = None;
    }
}

/// A queue whose due items the timer task moves in.
pub(crate) trait TimerTarget: Send + Sync + 'static {
    /// Moves every item due at `now` into the queue. Returns `None` once the queue is
    /// shut down (the task then ends), else the next deadline to sleep towards.
    fn fire(&self, now: Instant) -> Option<Option<Instant>>;
}

/// Starts the timer task of a queue. It holds the queue weakly and ends when the queue
/// shuts down or is dropped (the queue wakes it through `wake` in both cases).
pub(crate) fn spawn_timer(target: Weak<dyn TimerTarget>, wake: Arc<Notify>) {
    let task = timer_loop(target, wake);
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(task);
        }
        Err(_) => {
            let spawned = std::thread::Builder::new()
                .name("ctrl-workqueue-timer".into())
                .spawn(move || {
                    match tokio::runtime::Builder::new_current_thread()
                        .enable_time()
                        .build()
                    {
                        Ok(rt) => rt.block_on(task),
                        Err(err) => {
                            tracing::error!(%err, "building the workqueue timer runtime failed")
                        }
                    }
                });
            if let Err(err) = spawned {
                tracing::error!(%err, "starting the workqueue timer thread failed");
            }
        }
    }
}

async fn timer_loop(target: Weak<dyn TimerTarget>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(q) = target.upgrade() else { return };
            match q.fire(Instant::now()) {
                None => return,
                Some(next) => next,
            }
        };
        match next {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
