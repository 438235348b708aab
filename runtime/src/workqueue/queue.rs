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
//! The slot's other fields (its earliest pending delay, metric timestamps) and the
//! bookkeeping shared with the priority queue are in `super::core`. A slot with no flag
//! and no delay is freed. [`super::RateLimitingQueue`] wraps this state in one
//! `parking_lot::Mutex` (`super::shared`); every operation takes the lock once.

use std::collections::VecDeque;

use tokio::time::Instant;

use super::QueueKey;
use super::core::{Core, PROCESSING, QueueState};
use super::metrics::QueueMetrics;
use super::table::KeyArg;

/// The item is queued (in the FIFO, or waiting for `done` when also [`PROCESSING`]).
const DIRTY: u8 = 1;

/// Everything under the queue lock.
pub(crate) struct State<T> {
    pub(crate) core: Core<T, ()>,
    fifo: VecDeque<u32>,
}

/// What `done` hands back: waiters to wake, whether a drain finished, and the key if its
/// slot was freed (all for after the lock is released).
pub(crate) struct DoneResult<T> {
    pub(crate) wake: usize,
    pub(crate) drained: bool,
    pub(crate) freed: Option<T>,
}

impl<T: QueueKey> State<T> {
    pub(crate) fn new(metrics: Option<QueueMetrics>) -> Self {
        Self {
            core: Core::new(metrics),
            fifo: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.fifo.len()
    }

    /// `Add` (see [`QueueState::add_now`]).
    pub(crate) fn add<K: KeyArg<T>>(&mut self, hash: u64, key: K) -> (Option<K>, usize) {
        if self.core.shutting_down {
            return (Some(key), 0);
        }
        let (idx, rejected) = self.core.slot(hash, key);
        (rejected, self.add_idx(idx, 0))
    }

    /// `AddAfter` with a positive delay, due at `at`: keeps the earliest deadline. Returns
    /// the key back when it was not stored, and (start, wake) for the timer task.
    pub(crate) fn add_after<K: KeyArg<T>>(
        &mut self,
        hash: u64,
        key: K,
        at: Instant,
    ) -> (Option<K>, (bool, bool)) {
        if self.core.shutting_down {
            return (Some(key), (false, false));
        }
        self.core.count_retry();
        let (idx, rejected) = self.core.slot(hash, key);
        let tick = self.core.tick_of(at);
        let later = self
            .core
            .table
            .get(idx)
            .and_then(|n| n.val.ready_tick)
            .is_some_and(|r| r <= tick);
        if later {
            return (rejected, (false, false));
        }
        (rejected, self.core.delay(idx, tick))
    }

    /// `Add` for a key already in the table (e.g. one whose delay expired), queued at `at`
    /// (see `Core::count_add`). Returns the number of waiters to wake.
    fn add_idx(&mut self, idx: u32, at: u64) -> usize {
        let Some(node) = self.core.table.get_mut(idx) else {
            return 0;
        };
        let flags = node.val.flags;
        if flags & DIRTY != 0 {
            return 0;
        }
        node.val.flags |= DIRTY;
        self.core.count_add(idx, 0, at);
        if flags & PROCESSING != 0 {
            return 0;
        }
        self.fifo.push_back(idx);
        self.core.take_waiter()
    }

    /// `Get` without waiting: the next key, marked as processing (`now`: see
    /// `Core::start_processing`).
    pub(crate) fn pop(&mut self, now: u64) -> Option<T> {
        let idx = self.fifo.pop_front()?;
        let node = self.core.table.get_mut(idx)?;
        node.val.flags &= !DIRTY;
        self.core.start_processing(idx, 0, now).map(|(key, _)| key)
    }

    /// `Done`: the key is no longer processed; queued again if it was re-added.
    pub(crate) fn done(&mut self, hash: u64, key: &T, now: u64) -> DoneResult<T> {
        let mut res = DoneResult {
            wake: 0,
            drained: false,
            freed: None,
        };
        let Some(idx) = self.core.finish_processing(hash, key, now) else {
            return res;
        };
        if let Some(node) = self.core.table.get(idx) {
            if node.val.flags & DIRTY != 0 {
                self.fifo.push_back(idx);
                res.wake = self.core.take_waiter();
            } else if node.val.ready_tick.is_none() {
                res.freed = self.core.table.remove(idx);
            }
        }
        res.drained = self.core.drained();
        res
    }
}

impl<T: QueueKey> QueueState<T> for State<T> {
    type KeyState = ();
    fn core(&self) -> &Core<T, ()> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<T, ()> {
        &mut self.core
    }
    fn add_now<K: KeyArg<T>>(&mut self, hash: u64, key: K) -> (Option<K>, usize) {
        self.add(hash, key)
    }
    fn fire_slot(&mut self, idx: u32, at: u64) -> usize {
        if let Some(node) = self.core.table.get_mut(idx) {
            node.val.ready_tick = None;
        }
        self.add_idx(idx, at)
    }
}
