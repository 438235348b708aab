//! Delays: the deadline heap and the one timer task per queue that moves items into the
//! queue when their time comes (client-go's `delaying_queue.go`).
//!
//! A queue keeps, under its own lock, a [`DelayHeap`] of `(deadline, seq, slot)`; the
//! slot itself remembers its earliest pending deadline, so a later, longer delay for the
//! same key is ignored and a shorter one simply wins (stale heap entries are skipped when
//! they come up). The timer task sleeps until the earliest deadline and is woken early only
//! when an add brings a deadline earlier than the one it sleeps towards.
//!
//! **Runtime:** the timer task is started on the first positive delay, on the current
//! tokio runtime if there is one (so `tokio::time::pause` drives it in tests), otherwise on
//! a small dedicated thread running its own current-thread runtime. Nothing else in the
//! queues needs tokio: `add`, `done` and friends are plain synchronous calls, and `get` is
//! a future that any executor can poll.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

/// Pending deadlines of one queue.
#[derive(Default)]
pub(crate) struct DelayHeap {
    heap: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    seq: u64,
    /// The deadline the timer task will wake up at (at the latest), `None` if it sleeps
    /// until woken.
    timer_next: Option<Instant>,
    /// Whether the timer task was started.
    pub(crate) started: bool,
}

impl DelayHeap {
    /// Records that slot `idx` is due at `at`; returns whether the timer must be woken
    /// (the new deadline is earlier than what it sleeps towards).
    pub(crate) fn push(&mut self, at: Instant, idx: u32) -> bool {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, idx)));
        let wake = self.timer_next.is_none_or(|n| at < n);
        if wake {
            self.timer_next = Some(at);
        }
        wake
    }

    /// Pops the next entry due at or before `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, u32)> {
        match self.heap.peek() {
            Some(Reverse((at, _, _))) if *at <= now => {
                self.heap.pop().map(|Reverse((at, _, idx))| (at, idx))
            }
            _ => None,
        }
    }

    /// Sets and returns the deadline the timer task sleeps towards next.
    pub(crate) fn arm(&mut self) -> Option<Instant> {
        self.timer_next = self.heap.peek().map(|Reverse((at, _, _))| *at);
        self.timer_next
    }

    /// Drops every pending deadline (on shutdown).
    pub(crate) fn clear(&mut self) {
        self.heap = BinaryHeap::new();
        self.timer_next = None;
    }

    /// Number of pending deadlines (stale ones included).
    #[allow(dead_code)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
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
