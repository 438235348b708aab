//! The bookkeeping both state machines share, under the queue lock: the key table and its
//! per-key [`Entry`], the processing count, `get` waiters, shutdown and drain, the delay
//! heap and the metric handles.
//!
//! [`super::queue`] (the plain queue: a FIFO of slots) and [`super::priority`] (FIFO
//! buckets per priority) each wrap a [`Core`] and implement [`QueueState`]; the lock, the
//! waiting of `get` and the timer task around them are in [`super::shared`].

use std::num::NonZeroU64;

use tokio::time::Instant;

use super::QueueKey;
use super::delaying::DelayHeap;
use super::metrics::{QueueMetrics, now_ticks};
use super::table::{KeyArg, Table};

/// The flag bit of an item handed out and not `done` yet (the same in both queues).
pub(crate) const PROCESSING: u8 = 2;

/// A key's state: the fields both queues keep, and the queue's own `S`
/// ([`QueueState::KeyState`]: the priority queue's priority and ticket, nothing for the
/// plain queue).
#[derive(Default)]
pub(crate) struct Entry<S> {
    /// The queue's flag bits ([`PROCESSING`] and its own).
    pub(crate) flags: u8,
    /// The earliest pending deadline of the key, if any, as the delay heap's tick (see
    /// [`Core::tick_of`]): 8 bytes where an `Instant` takes 16, and the heap fires whole
    /// ticks anyway.
    pub(crate) ready_tick: Option<NonZeroU64>,
    /// Its entry in `Core::in_flight` while processing (metrics only).
    in_flight: u32,
    /// When the key became ready (added with no delay, or its delay ended), a [`now_ticks`]
    /// stamp (with metrics only; 0 = unset).
    queued_at: u64,
    /// The queue's own per-key state.
    pub(crate) own: S,
}

/// What both queues keep under their lock besides their ready lists.
pub(crate) struct Core<T, S> {
    pub(crate) table: Table<T, Entry<S>>,
    pub(crate) delays: DelayHeap,
    processing: usize,
    /// When each item being processed started (metrics only).
    in_flight: InFlight,
    /// Waiters in `get` that no one has woken yet.
    idle: usize,
    pub(crate) shutting_down: bool,
    draining: bool,
    pub(crate) metrics: Option<QueueMetrics>,
}

/// A queue's state as the shared machinery (`super::shared`) sees it.
pub(crate) trait QueueState<T: QueueKey>: Send + 'static {
    /// The queue's own per-key state.
    type KeyState: Default;
    /// The shared part.
    fn core(&self) -> &Core<T, Self::KeyState>;
    /// The shared part, mutably.
    fn core_mut(&mut self) -> &mut Core<T, Self::KeyState>;
    /// `Add` now (priority 0): returns the key back when it was not stored (duplicate or
    /// shut down), so the caller drops it outside the lock, and the waiters to wake.
    fn add_now<K: KeyArg<T>>(&mut self, hash: u64, key: K) -> (Option<K>, usize);
    /// The timer found the deadline of slot `idx` due: make the item ready, its queue wait
    /// starting at `at` (see [`Core::count_add`]). Returns the number of `get` waiters to
    /// wake.
    fn fire_slot(&mut self, idx: u32, at: u64) -> usize;
}

impl<T: QueueKey, S: Default> Core<T, S> {
    pub(crate) fn new(metrics: Option<QueueMetrics>) -> Self {
        Self {
            table: Table::new(),
            delays: DelayHeap::new(),
            processing: 0,
            in_flight: InFlight::default(),
            idle: 0,
            shutting_down: false,
            draining: false,
            metrics,
        }
    }

    /// The slot of `key`, created if absent; the key comes back when it was not stored.
    pub(crate) fn slot<K: KeyArg<T>>(&mut self, hash: u64, key: K) -> (u32, Option<K>) {
        self.table.find_or_insert(hash, key, Entry::default)
    }

    /// Takes one idle `get` waiter to wake, if there is one.
    pub(crate) fn take_waiter(&mut self) -> usize {
        if self.idle > 0 {
            self.idle -= 1;
            1
        } else {
            0
        }
    }

    /// The item in `idx` became queued at priority `prio`: count it in the metrics. Its
    /// queue wait starts at `at`, a [`now_ticks`] timestamp the timer reads once for a whole
    /// batch of due items, or 0: read the clock now. An add passes 0, so it reads the clock
    /// only on a miss, under the lock; reading it before the lock would cost every dedup hit
    /// a clock read (S2 with metrics went from 0.84x to 0.75x of metrics off).
    pub(crate) fn count_add(&mut self, idx: u32, prio: i32, at: u64) {
        let Some(m) = &mut self.metrics else {
            return;
        };
        m.note_add(prio);
        if let Some(n) = self.table.get_mut(idx)
            && n.val.queued_at == 0
        {
            n.val.queued_at = if at != 0 { at } else { now_ticks() };
        }
    }

    /// Counts a delayed or rate-limited add in the metrics.
    pub(crate) fn count_retry(&mut self) {
        if let Some(m) = &mut self.metrics {
            m.note_retry();
        }
    }

    /// Hands out the item in `idx` (already taken off its ready list, at priority `prio`):
    /// marks it processing and returns its key and when it became ready (a [`now_ticks`]
    /// stamp, 0 if unstamped); records its queue latency (metrics only). `now` (a
    /// [`now_ticks`] timestamp read by `get` before it took the lock, 0 without metrics) is
    /// both the end of the item's wait and the start of its work.
    pub(crate) fn start_processing(&mut self, idx: u32, prio: i32, now: u64) -> Option<(T, u64)> {
        let n = self.table.get_mut(idx)?;
        n.val.flags |= PROCESSING;
        self.processing += 1;
        let e = &mut n.val;
        let ready_at = std::mem::take(&mut e.queued_at);
        if let Some(m) = &mut self.metrics {
            m.note_depth(prio, -1);
            if ready_at != 0 {
                m.note_latency(ready_at, now);
            }
            e.in_flight = self.in_flight.insert(now);
        }
        Some((n.key.clone(), ready_at))
    }

    /// `done` for `key` at `now` (a [`now_ticks`] timestamp read before the lock, 0 without
    /// metrics): `None` if it was not being processed, else its slot; records its work
    /// duration (metrics only).
    pub(crate) fn finish_processing(&mut self, hash: u64, key: &T, now: u64) -> Option<u32> {
        let idx = self.table.find(hash, key)?;
        let e = &mut self.table.get_mut(idx)?.val;
        if e.flags & PROCESSING == 0 {
            return None;
        }
        e.flags &= !PROCESSING;
        self.processing -= 1;
        if let Some(m) = &mut self.metrics
            && let Some(start) = self.in_flight.remove(e.in_flight)
        {
            m.note_work(start, now);
        }
        Some(idx)
    }

    /// Whether a draining shutdown waits for nothing any more.
    pub(crate) fn drained(&self) -> bool {
        self.draining && self.processing == 0
    }

    /// The delay heap's tick of a deadline: deadlines in one tick fire together, so two
    /// deadlines of a key are compared by tick.
    pub(crate) fn tick_of(&self, at: Instant) -> NonZeroU64 {
        self.delays.tick_of(at)
    }

    /// Records that slot `idx` is due in `tick` (the caller checked it is earlier than any
    /// pending deadline). Returns (start the timer task, wake the timer task).
    pub(crate) fn delay(&mut self, idx: u32, tick: NonZeroU64) -> (bool, bool) {
        if let Some(n) = self.table.get_mut(idx) {
            n.val.ready_tick = Some(tick);
        }
        let wake = self.delays.push(tick, idx);
        let start = !self.delays.started;
        self.delays.started = true;
        (start, wake && !start)
    }

    /// Whether the deadline of slot `idx` still falls in `tick` (else the heap's entry is
    /// stale: an earlier deadline already fired, or the slot was reused).
    pub(crate) fn due(&self, tick: u64, idx: u32) -> bool {
        self.table
            .get(idx)
            .and_then(|n| n.val.ready_tick)
            .is_some_and(|r| r.get() == tick)
    }

    /// Items handed out and not done yet.
    pub(crate) fn processing(&self) -> usize {
        self.processing
    }

    /// Counts one more `get` waiter to wake on the next add.
    pub(crate) fn register_idle(&mut self) {
        self.idle += 1;
    }

    /// Starts shutdown: adds are ignored from now on, pending delays are dropped (client-go
    /// stops its waiting loop; their slots stay until the queue is dropped), and every
    /// waiter is woken by the caller.
    pub(crate) fn begin_shutdown(&mut self, drain: bool) {
        self.shutting_down = true;
        self.draining |= drain;
        self.idle = 0;
        self.delays.clear();
    }

    /// The processing start timestamps of in-flight items (metrics only).
    pub(crate) fn processing_starts(&self) -> impl Iterator<Item = u64> + '_ {
        self.in_flight.starts.iter().copied().filter(|&t| t != 0)
    }
}

/// The start timestamps of the items being processed, for the work duration and the
/// unfinished-work gauges: a slab whose entry number the item's slot keeps, so `done`
/// clears its own entry and touches no other item's slot (with a `swap_remove` list the
/// moved entry's slot had to be updated: a cache line another consumer's core owns).
#[derive(Default)]
struct InFlight {
    /// Start timestamps; 0 marks a free entry ([`now_ticks`] is never 0).
    starts: Vec<u64>,
    free: Vec<u32>,
}

impl InFlight {
    /// Records a start; returns its entry.
    fn insert(&mut self, start: u64) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.starts[i as usize] = start;
                i
            }
            None => {
                self.starts.push(start);
                // u32 entries: never more than the number of concurrent workers.
                (self.starts.len() - 1) as u32
            }
        }
    }

    /// Clears entry `i`; returns its start if it held one.
    fn remove(&mut self, i: u32) -> Option<u64> {
        let slot = self.starts.get_mut(i as usize)?;
        let start = std::mem::take(slot);
        if start == 0 {
            return None;
        }
        self.free.push(i);
        Some(start)
    }
}
