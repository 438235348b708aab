//! [`PriorityQueue`]: controller-runtime's priority queue (`pkg/controller/priorityqueue`),
//! the queue controllers use by default.
//!
//! Like the plain queue it dedups and never hands out an item that is being processed.
//! Each queued item has a priority and a ready time: adding an item that is already queued
//! keeps the **maximum** priority and the **earliest** ready time. Ready items are handed
//! out highest priority first, FIFO within a priority (an item whose priority is raised
//! goes to the back of its new priority, as in controller-runtime).
//!
//! Inside: the same key table as the plain queue (`super::table`), one FIFO bucket of slot
//! numbers per priority (a `BTreeMap`, highest first; an item moved to another priority
//! leaves a stale ticket behind that `get` skips), and the same deadline heap and single
//! timer task as the delaying queue (`super::delaying`). Unlike controller-runtime there is
//! no spinning goroutine: adds hand items to waiters directly.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::delaying::{DelayHeap, TimerTarget};
use super::metrics::QueueMetrics;
use super::queue::{now_ns, secs_between};
use super::rate_limiter::default_item_rate_limiter;
use super::shared::{Shared, WaitState};
use super::table::Table;
use super::{AddOpts, Queue, QueueConfig, QueueKey};

/// The item is queued (ready or waiting for its ready time).
const QUEUED: u8 = 1;
/// The item was handed out and `done` was not called yet.
const PROCESSING: u8 = 2;
/// The item sits in a priority bucket under its current ticket.
const IN_BUCKET: u8 = 4;

#[derive(Default)]
struct Entry {
    flags: u8,
    priority: i32,
    /// `Some` while queued but not ready yet.
    ready_at: Option<Instant>,
    /// Identifies the valid bucket element of this slot.
    ticket: u64,
    proc_pos: u32,
    add_ns: u64,
    start_ns: u64,
}

struct State<T> {
    table: Table<T, Entry>,
    buckets: BTreeMap<Reverse<i32>, VecDeque<(u64, u32)>>,
    next_ticket: u64,
    /// Queued items that are ready (handed out or not yet because processing).
    ready: usize,
    processing: usize,
    proc_list: Vec<u32>,
    delays: DelayHeap,
    idle: usize,
    shutting_down: bool,
    draining: bool,
    metrics: Option<QueueMetrics>,
}

impl<T: QueueKey> State<T> {
    fn take_waiter(&mut self) -> usize {
        if self.idle > 0 {
            self.idle -= 1;
            1
        } else {
            0
        }
    }

    /// Gives the item in `idx` a fresh ticket: its place in FIFO order within its priority.
    fn new_ticket(&mut self, idx: u32) {
        self.next_ticket += 1;
        if let Some(n) = self.table.get_mut(idx) {
            n.val.ticket = self.next_ticket;
        }
    }

    /// Puts the item in `idx` into its priority's bucket, in ticket order (at the back,
    /// unless it waited for `done` while younger items were added).
    fn push_bucket(&mut self, idx: u32) -> usize {
        let Some(n) = self.table.get_mut(idx) else {
            return 0;
        };
        n.val.flags |= IN_BUCKET;
        let (ticket, prio) = (n.val.ticket, n.val.priority);
        let bucket = self.buckets.entry(Reverse(prio)).or_default();
        if bucket.back().is_none_or(|&(t, _)| t < ticket) {
            bucket.push_back((ticket, idx));
        } else {
            let pos = bucket.partition_point(|&(t, _)| t < ticket);
            bucket.insert(pos, (ticket, idx));
        }
        self.take_waiter()
    }

    /// The item in `idx` becomes ready: counted in `len` and the metrics, and put in its
    /// bucket unless it is being processed.
    fn become_ready(&mut self, idx: u32) -> usize {
        let Some(n) = self.table.get_mut(idx) else {
            return 0;
        };
        let e = &mut n.val;
        e.ready_at = None;
        self.ready += 1;
        self.next_ticket += 1;
        e.ticket = self.next_ticket;
        if let Some(m) = &mut self.metrics {
            m.adds.inc();
            m.depth(e.priority).inc();
            if e.add_ns == 0 {
                e.add_ns = now_ns();
            }
        }
        if e.flags & PROCESSING == 0 {
            self.push_bucket(idx)
        } else {
            0
        }
    }

    /// `AddWithOpts` for one key; returns the key when it was not stored and the number of
    /// waiters to wake and whether the timer must be woken.
    fn add(
        &mut self,
        hash: u64,
        key: T,
        prio: i32,
        ready_at: Option<Instant>,
    ) -> (Option<T>, usize, bool) {
        if self.shutting_down {
            return (Some(key), 0, false);
        }
        let (idx, rejected) = match self.table.find(hash, &key) {
            Some(idx) => (idx, Some(key)),
            None => (self.table.insert(hash, key, Entry::default()), None),
        };
        let Some(n) = self.table.get_mut(idx) else {
            return (rejected, 0, false);
        };
        let e = &mut n.val;
        if e.flags & QUEUED == 0 {
            e.flags |= QUEUED;
            e.priority = prio;
            return match ready_at {
                None => (rejected, self.become_ready(idx), false),
                Some(at) => {
                    e.ready_at = Some(at);
                    (rejected, 0, self.delays.push(at, idx))
                }
            };
        }
        let mut woken = 0;
        if prio > e.priority {
            let old = e.priority;
            e.priority = prio;
            if e.ready_at.is_none() {
                if let Some(m) = &mut self.metrics {
                    m.depth(old).dec();
                    m.depth(prio).inc();
                }
                let in_bucket = e.flags & IN_BUCKET != 0;
                // A raised item goes to the back of its new priority; its old bucket
                // element goes stale (the ticket no longer matches).
                self.new_ticket(idx);
                if in_bucket {
                    woken += self.push_bucket(idx);
                }
            }
        }
        let Some(n) = self.table.get_mut(idx) else {
            return (rejected, woken, false);
        };
        let mut wake_timer = false;
        if let Some(cur) = n.val.ready_at {
            match ready_at {
                None => woken += self.become_ready(idx),
                Some(at) if at < cur => {
                    n.val.ready_at = Some(at);
                    wake_timer = self.delays.push(at, idx);
                }
                Some(_) => {}
            }
        }
        (rejected, woken, wake_timer)
    }

    fn pop(&mut self, now: u64) -> Option<(T, i32, Option<f64>)> {
        let mut found = None;
        let mut emptied = None;
        for (prio, bucket) in self.buckets.iter_mut() {
            while let Some((ticket, idx)) = bucket.pop_front() {
                if let Some(n) = self.table.get(idx)
                    && n.val.ticket == ticket
                    && n.val.flags & IN_BUCKET != 0
                {
                    found = Some(idx);
                    break;
                }
            }
            if bucket.is_empty() {
                emptied = Some(*prio);
            }
            if found.is_some() {
                break;
            }
        }
        if let Some(p) = emptied
            && self.buckets.len() > 4
        {
            self.buckets.remove(&p);
        }
        let idx = found?;
        let n = self.table.get_mut(idx)?;
        let e = &mut n.val;
        e.flags = (e.flags & !(IN_BUCKET | QUEUED)) | PROCESSING;
        self.ready -= 1;
        self.processing += 1;
        let prio = e.priority;
        let mut latency = None;
        if let Some(m) = &mut self.metrics {
            m.depth(prio).dec();
            e.start_ns = now;
            if e.add_ns != 0 {
                latency = Some(secs_between(e.add_ns, now));
                e.add_ns = 0;
            }
            e.proc_pos = self.proc_list.len() as u32;
            self.proc_list.push(idx);
        }
        Some((n.key.clone(), prio, latency))
    }

    fn done(&mut self, hash: u64, key: &T, now: u64) -> (usize, bool, Option<f64>, Option<T>) {
        let Some(idx) = self.table.find(hash, key) else {
            return (0, false, None, None);
        };
        let Some(n) = self.table.get_mut(idx) else {
            return (0, false, None, None);
        };
        let e = &mut n.val;
        if e.flags & PROCESSING == 0 {
            return (0, false, None, None);
        }
        e.flags &= !PROCESSING;
        self.processing -= 1;
        let mut observe = None;
        if self.metrics.is_some() {
            if e.start_ns != 0 {
                observe = Some(secs_between(e.start_ns, now));
                e.start_ns = 0;
            }
            let pos = e.proc_pos as usize;
            self.proc_list.swap_remove(pos);
            if let Some(&moved) = self.proc_list.get(pos)
                && let Some(m) = self.table.get_mut(moved)
            {
                m.val.proc_pos = pos as u32;
            }
        }
        let mut woken = 0;
        let mut freed = None;
        match self.table.get(idx).map(|n| (n.val.flags, n.val.ready_at)) {
            Some((f, None)) if f & QUEUED != 0 => woken = self.push_bucket(idx),
            Some((f, _)) if f & QUEUED == 0 => {
                freed = self.table.remove(idx);
            }
            _ => {}
        }
        (woken, self.draining && self.processing == 0, observe, freed)
    }
}

/// controller-runtime's priority queue: dedup, priorities, delays, rate limiting.
///
/// * [`add_with_opts`](Self::add_with_opts) adds items with a delay, a rate limit and/or
///   a priority; an item already queued keeps the max priority and earliest ready time.
/// * [`get_with_priority`](Self::get_with_priority) hands out the ready item with the
///   highest priority (FIFO within a priority) and marks it as processing; an item being
///   processed is not handed out again before [`done`](Self::done).
/// * [`len`](Self::len) counts ready items only (including re-added ones that wait for
///   `done`), as controller-runtime does.
/// * After [`shut_down`](Self::shut_down) adds are ignored, delayed items dropped, and
///   `get` hands out the ready items still queued, then returns `None`.
///
/// Cloning yields a handle to the same queue. Only delays need a tokio runtime.
pub struct PriorityQueue<T> {
    inner: Arc<Shared<State<T>, T>>,
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: QueueKey> PriorityQueue<T> {
    /// A priority queue named `cfg.name` (the `name`/`controller` metric label), with
    /// `cfg.rate_limiter` for rate-limited adds (default: per-item exponential 5 ms ..
    /// 1000 s) and metrics from `cfg.metrics` (default: none).
    pub fn new(cfg: QueueConfig<T>) -> Self {
        let metrics = QueueMetrics::new(cfg.metrics, &cfg.name, true);
        let limiter = cfg.rate_limiter.unwrap_or_else(default_item_rate_limiter);
        let table = Table::new();
        let hasher = table.hasher().clone();
        let state = State {
            table,
            buckets: BTreeMap::new(),
            next_ticket: 0,
            ready: 0,
            processing: 0,
            proc_list: Vec::new(),
            delays: DelayHeap::new(),
            idle: 0,
            shutting_down: false,
            draining: false,
            metrics,
        };
        Self {
            inner: Shared::new(state, hasher, limiter),
        }
    }

    /// Adds `items` with `opts` (controller-runtime's `AddWithOpts`). With both `after` and
    /// `rate_limited`, the shorter of the two delays applies. A positive delay counts as a
    /// retry in the metrics.
    pub fn add_with_opts(&self, opts: AddOpts, items: impl IntoIterator<Item = T>) {
        let prio = opts.priority.unwrap_or(0);
        let mut wake_n = 0;
        let mut wake_timer = false;
        let mut start_timer = false;
        let mut rejected = Vec::new();
        for key in items {
            let mut after = opts.after.unwrap_or(Duration::ZERO);
            if opts.rate_limited {
                let rl = self.inner.limiter.when(&key);
                if after.is_zero() || rl < after {
                    after = rl;
                }
            }
            let ready_at = (!after.is_zero()).then(|| Instant::now() + after);
            let hash = self.inner.hash(&key);
            let mut s = self.inner.state.lock();
            if ready_at.is_some()
                && !s.shutting_down
                && let Some(m) = &s.metrics
            {
                m.retries.inc();
            }
            let (rej, n, wt) = s.add(hash, key, prio, ready_at);
            wake_n += n;
            wake_timer |= wt;
            if ready_at.is_some() && !s.delays.started && !s.shutting_down {
                s.delays.started = true;
                start_timer = true;
            }
            drop(s);
            if let Some(r) = rej {
                rejected.push(r);
            }
        }
        drop(rejected);
        self.inner.wake_getters(wake_n);
        self.inner.timer(start_timer, wake_timer);
    }

    /// Adds `item` now with priority 0.
    pub fn add(&self, item: T) {
        let hash = self.inner.hash(&item);
        let (rejected, n, _) = self.inner.state.lock().add(hash, item, 0, None);
        drop(rejected);
        self.inner.wake_getters(n);
    }

    /// Adds `item` once `delay` has passed.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(
            AddOpts {
                after: Some(delay),
                ..Default::default()
            },
            [item],
        );
    }

    /// Adds `item` after the delay its rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        self.add_with_opts(
            AddOpts {
                rate_limited: true,
                ..Default::default()
            },
            [item],
        );
    }

    /// Waits for the ready item with the highest priority and marks it as processing;
    /// returns it with its priority, or `None` once shut down and empty.
    pub async fn get_with_priority(&self) -> Option<(T, i32)> {
        self.inner
            .get(|s, now| {
                s.pop(now)
                    .map(|(item, prio, latency)| ((item, prio), latency))
            })
            .await
    }

    /// Like [`get_with_priority`](Self::get_with_priority) without the priority.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(t, _)| t)
    }

    /// Marks `item` as done; if it was re-added while processed, it is ready again.
    pub fn done(&self, item: &T) {
        let now = self.inner.now();
        let hash = self.inner.hash(item);
        let (n, drained, observe, freed) = self.inner.state.lock().done(hash, item, now);
        drop(freed);
        self.inner.after_done(n, drained, observe);
    }

    /// Clears the rate limiter's memory of `item`.
    pub fn forget(&self, item: &T) {
        self.inner.limiter.forget(item);
    }

    /// How many times `item` was rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.inner.limiter.num_requeues(item)
    }

    /// Number of ready items (including re-added ones waiting for `done`); items waiting
    /// for their ready time are not counted.
    pub fn len(&self) -> usize {
        self.inner.state.lock().ready
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: adds are ignored, delayed items dropped, and `get` returns
    /// the ready items still queued, then `None`.
    pub fn shut_down(&self) {
        self.inner.shut_down(false);
    }

    /// Shuts down, then waits until every item handed out has been marked done.
    pub async fn shut_down_with_drain(&self) {
        self.inner.shut_down_with_drain().await
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        self.inner.shutting_down()
    }
}

impl<T: QueueKey> TimerTarget for Shared<State<T>, T> {
    fn fire(&self, now: Instant) -> Option<Option<Instant>> {
        let mut s = self.state.lock();
        if s.shutting_down {
            return None;
        }
        let mut n = 0;
        let mut handed = 0usize;
        while let Some((tick, idx)) = s.delays.pop_due(now) {
            let st = &*s;
            let valid = st.table.get(idx).is_some_and(|n| {
                n.val.flags & QUEUED != 0
                    && n.val.ready_at.map(|r| st.delays.tick_of(r)) == Some(tick)
            });
            if valid {
                n += s.become_ready(idx);
            }
            handed += 1;
            if handed.is_multiple_of(64) {
                // Long batches: let getters start and let blocked adders in.
                self.wake_getters(std::mem::take(&mut n));
                parking_lot::MutexGuard::bump(&mut s);
            }
        }
        let next = s.delays.arm();
        drop(s);
        self.wake_getters(n);
        Some(next)
    }
}

impl<T: QueueKey> WaitState for State<T> {
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

impl<T: QueueKey> Queue<T> for PriorityQueue<T> {
    fn add(&self, item: T) {
        PriorityQueue::add(self, item)
    }
    fn add_after(&self, item: T, delay: Duration) {
        PriorityQueue::add_after(self, item, delay)
    }
    fn add_rate_limited(&self, item: T) {
        PriorityQueue::add_rate_limited(self, item)
    }
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        PriorityQueue::add_with_opts(self, opts, [item])
    }
    fn get_boxed(&self) -> BoxFuture<'_, Option<(T, i32)>> {
        Box::pin(self.get_with_priority())
    }
    fn done(&self, item: &T) {
        PriorityQueue::done(self, item)
    }
    fn forget(&self, item: &T) {
        PriorityQueue::forget(self, item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        PriorityQueue::num_requeues(self, item)
    }
    fn len(&self) -> usize {
        PriorityQueue::len(self)
    }
    fn shut_down(&self) {
        PriorityQueue::shut_down(self)
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Box::pin(PriorityQueue::shut_down_with_drain(self))
    }
    fn shutting_down(&self) -> bool {
        PriorityQueue::shutting_down(self)
    }
    fn is_priority(&self) -> bool {
        true
    }
}
