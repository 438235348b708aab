//! The plain queue's state machine (client-go's `queue.go`): dedup, the processing set,
//! FIFO order, shutdown and drain, plus the waiting of `get`.
//!
//! client-go keeps three sets; here each key has one slot in a [`Table`] with a few flag
//! bits, and the FIFO holds slot numbers:
//!
//! | client-go | flags of the slot |
//! |---|---|
//! | in `dirty`, not in `processing` (so in `queue`) | `DIRTY` (and in the FIFO) |
//! | in `processing` | `PROCESSING` |
//! | in both (re-added while processed) | `DIRTY \| PROCESSING` (queued again at `done`) |
//!
//! A slot also remembers its earliest pending delay (see `super::delaying`) and, when the
//! queue has metrics, when it was added and when its processing started. A slot with no
//! flag and no delay is freed. [`super::RateLimitingQueue`] wraps this state in one
//! `parking_lot::Mutex`; every operation takes the lock once.

use std::collections::VecDeque;
use std::sync::OnceLock;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::QueueKey;
use super::delaying::DelayHeap;
use super::metrics::QueueMetrics;
use super::table::Table;

pub(crate) const DIRTY: u8 = 1;
pub(crate) const PROCESSING: u8 = 2;

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A metrics timestamp: raw TSC ticks read through `quanta` (about 11 ns here, against
/// 28 ns for `Instant::now`; three are taken per item). Never 0 (0 means "not set").
pub(crate) fn now_ns() -> u64 {
    clock().raw().max(1)
}

/// Seconds between two [`now_ns`] timestamps.
pub(crate) fn secs_between(from: u64, to: u64) -> f64 {
    if to <= from {
        return 0.0;
    }
    clock().delta_as_nanos(from, to) as f64 / 1e9
}

/// The queue's state for one key.
#[derive(Default)]
pub(crate) struct Entry {
    pub(crate) flags: u8,
    /// Position in `State::proc_list` while processing (metrics only).
    proc_pos: u32,
    /// The earliest pending delay of this key, if any.
    pub(crate) ready_at: Option<Instant>,
    /// When the key was added (metrics only; 0 = unset).
    add_ns: u64,
    /// When its processing started (metrics only; 0 = unset).
    start_ns: u64,
}

/// Everything under the queue lock.
pub(crate) struct State<T> {
    pub(crate) table: Table<T, Entry>,
    fifo: VecDeque<u32>,
    pub(crate) delays: DelayHeap,
    processing: usize,
    /// Slots being processed, for the unfinished-work gauges (metrics only).
    proc_list: Vec<u32>,
    /// Waiters in `get` that no one has woken yet.
    pub(crate) idle: usize,
    pub(crate) shutting_down: bool,
    pub(crate) draining: bool,
    pub(crate) metrics: Option<QueueMetrics>,
}

/// What an operation asks the caller to do once the lock is released.
#[derive(Default)]
#[must_use]
pub(crate) struct After {
    /// Wake this many waiters of `get`.
    pub(crate) wake: usize,
    /// Wake `shut_down_with_drain`.
    pub(crate) drained: bool,
    /// A histogram observation to record (seconds), outside the lock.
    pub(crate) observe: Option<f64>,
}

/// What `done` hands back: the work to do after unlocking, and the key if its slot was
/// freed (dropped outside the lock).
pub(crate) type DoneResult<T> = (After, Option<T>);

impl<T: QueueKey> State<T> {
    pub(crate) fn new(metrics: Option<QueueMetrics>) -> Self {
        Self {
            table: Table::new(),
            fifo: VecDeque::new(),
            delays: DelayHeap::new(),
            processing: 0,
            proc_list: Vec::new(),
            idle: 0,
            shutting_down: false,
            draining: false,
            metrics,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.fifo.len()
    }

    fn take_waiter(&mut self) -> usize {
        if self.idle > 0 {
            self.idle -= 1;
            1
        } else {
            0
        }
    }

    /// `Add`: returns the key back when it was not stored (duplicate or shut down), so
    /// the caller drops it outside the lock.
    pub(crate) fn add(&mut self, hash: u64, key: T) -> (Option<T>, usize) {
        if self.shutting_down {
            return (Some(key), 0);
        }
        match self.table.find(hash, &key) {
            Some(idx) => (Some(key), self.add_idx(idx)),
            None => {
                let idx = self.table.insert(hash, key, Entry::default());
                (None, self.add_idx(idx))
            }
        }
    }

    /// `Add` for a key already in the table (e.g. one whose delay expired). The clock is
    /// read (for the metrics) only when the key really becomes queued.
    pub(crate) fn add_idx(&mut self, idx: u32) -> usize {
        let Some(node) = self.table.get_mut(idx) else {
            return 0;
        };
        let e = &mut node.val;
        if e.flags & DIRTY != 0 {
            return 0;
        }
        e.flags |= DIRTY;
        if let Some(m) = &mut self.metrics {
            m.adds.inc();
            m.depth(0).inc();
            if e.add_ns == 0 {
                e.add_ns = now_ns();
            }
        }
        if e.flags & PROCESSING != 0 {
            return 0;
        }
        self.fifo.push_back(idx);
        self.take_waiter()
    }

    /// `Get` without waiting: the next key, marked as processing.
    pub(crate) fn pop(&mut self, now: u64) -> Option<(T, Option<f64>)> {
        let idx = self.fifo.pop_front()?;
        let node = self.table.get_mut(idx)?;
        node.val.flags = (node.val.flags & !DIRTY) | PROCESSING;
        self.processing += 1;
        let mut latency = None;
        if let Some(m) = &mut self.metrics {
            m.depth(0).dec();
            let e = &mut node.val;
            e.start_ns = now;
            if e.add_ns != 0 {
                latency = Some(secs_between(e.add_ns, now));
                e.add_ns = 0;
            }
            e.proc_pos = self.proc_list.len() as u32;
            self.proc_list.push(idx);
        }
        Some((node.key.clone(), latency))
    }

    /// `Done`: the key is no longer processed; queued again if it was re-added.
    pub(crate) fn done(&mut self, hash: u64, key: &T, now: u64) -> DoneResult<T> {
        let mut after = After::default();
        let Some(idx) = self.table.find(hash, key) else {
            return (after, None);
        };
        let Some(node) = self.table.get_mut(idx) else {
            return (after, None);
        };
        let e = &mut node.val;
        if e.flags & PROCESSING == 0 {
            return (after, None);
        }
        e.flags &= !PROCESSING;
        self.processing -= 1;
        if self.metrics.is_some() {
            if e.start_ns != 0 {
                after.observe = Some(secs_between(e.start_ns, now));
                e.start_ns = 0;
            }
            let pos = e.proc_pos as usize;
            self.proc_list.swap_remove(pos);
            if let Some(&moved) = self.proc_list.get(pos)
                && let Some(n) = self.table.get_mut(moved)
            {
                n.val.proc_pos = pos as u32;
            }
        }
        let mut freed = None;
        let Some(node) = self.table.get_mut(idx) else {
            return (after, None);
        };
        if node.val.flags & DIRTY != 0 {
            self.fifo.push_back(idx);
            after.wake = self.take_waiter();
        } else if node.val.ready_at.is_none() {
            freed = self.table.remove(idx);
        }
        if self.draining && self.processing == 0 {
            after.drained = true;
        }
        (after, freed)
    }

    /// Frees slot `idx` if nothing refers to it any more.
    pub(crate) fn release_if_unused(&mut self, idx: u32) {
        if let Some(n) = self.table.get(idx)
            && n.val.flags == 0
            && n.val.ready_at.is_none()
        {
            self.table.remove(idx);
        }
    }
}

impl<T: QueueKey> super::shared::WaitState for State<T> {
    fn shutting_down(&self) -> bool {
        self.shutting_down
    }
    fn register_idle(&mut self) {
        self.idle += 1;
    }
    fn processing(&self) -> usize {
        self.processing
    }
    fn begin_shutdown(&mut self, drain: bool) {
        self.shutting_down = true;
        self.draining |= drain;
        self.idle = 0;
        // Pending delays are dropped (client-go stops its waiting loop); their slots stay
        // until the queue itself is dropped.
        self.delays.clear();
    }
    fn processing_starts(&self) -> Vec<u64> {
        self.proc_list
            .iter()
            .filter_map(|&idx| self.table.get(idx).map(|n| n.val.start_ns))
            .filter(|&t| t != 0)
            .collect()
    }
    fn metrics(&self) -> Option<&QueueMetrics> {
        self.metrics.as_ref()
    }
}

/// `get`'s wait: tries `attempt(false)`; if it yields nothing, registers interest in
/// `notify`, tries again with `attempt(true)` (which must count itself as an idle waiter
/// under the queue lock when it yields nothing) and sleeps until notified. Adders wake one
/// idle waiter each (`notify_one`), so no wakeup is lost and no thundering herd forms.
pub(crate) async fn take_or_wait<R>(
    notify: &Notify,
    mut attempt: impl FnMut(bool) -> Option<R>,
) -> R {
    if let Some(r) = attempt(false) {
        return r;
    }
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(r) = attempt(true) {
            return r;
        }
        notified.await;
    }
}

/// Wakes `n` waiters.
pub(crate) fn wake(notify: &Notify, n: usize) {
    for _ in 0..n {
        notify.notify_one();
    }
}
