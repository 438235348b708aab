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
//!
//! Triggers: a handle from [`PriorityQueue::keeping_triggers`] (what `super::Triggered`
//! picks for a priority queue) records each add's [`Trigger`] in the key's own slot, in the
//! same lookup under the same lock as the add; the first cause is held inline, so a key
//! queued for one cause allocates nothing for it. As the queue keeps one ready time per key,
//! every trigger of a key, delayed or not, joins the set taken at its next hand-out. The
//! set's [`Triggers::waited`] counts from when the key became ready, read from the ready
//! stamp and hand-out time the queue's metrics take anyway (a controller's queue has
//! metrics): without metrics the wait is not measured, so keeping triggers reads no clock.

use std::borrow::{Borrow, Cow};
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::core::{Core, PROCESSING, QueueState};
use super::fair::{Bucket, FairnessFn};
use super::metrics::QueueMetrics;
use super::rate_limiter::default_item_rate_limiter;
use super::shared::Shared;
use super::table::{Borrowed, KeyArg, Owned};
use super::triggers::{Kept, Trigger, Triggers};
use super::{AddOpts, Queue, QueueConfig, QueueKey};

/// The item is queued (ready or waiting for its ready time).
const QUEUED: u8 = 1;
/// The item sits in a priority bucket under its current ticket.
const IN_BUCKET: u8 = 4;

/// The priority queue's own per-key state.
#[derive(Default)]
struct Prio {
    priority: i32,
    /// Identifies the valid bucket element of this slot.
    ticket: u64,
    /// The triggers recorded since the key was last taken (trigger-keeping handles only).
    triggers: Kept,
}

struct State<T> {
    core: Core<T, Prio>,
    buckets: BTreeMap<Reverse<i32>, Bucket>,
    /// The fairness key of an item, when items of one priority are handed out fairly
    /// across keys (`super::fair`).
    fairness: Option<FairnessFn<T>>,
    next_ticket: u64,
    /// Queued items that are ready (handed out or not yet because processing).
    ready: usize,
}

/// A key handed out with its priority, its triggers and the (ready, hand-out) stamps of its
/// queue wait, if measured.
type Popped<T> = (T, i32, Kept, Option<(u64, u64)>);

/// What an add asks for once the lock is released: waiters to wake, and (start, wake)
/// for the timer task.
type AddResult = (usize, (bool, bool));

impl<T: QueueKey> State<T> {
    /// Gives the item in `idx` a fresh ticket: its place in FIFO order within its priority.
    fn new_ticket(&mut self, idx: u32) {
        self.next_ticket += 1;
        if let Some(n) = self.core.table.get_mut(idx) {
            n.val.own.ticket = self.next_ticket;
        }
    }

    /// Puts the item in `idx` into its priority's bucket, in ticket order (at the back,
    /// unless it waited for `done` while younger items were added).
    fn push_bucket(&mut self, idx: u32) -> usize {
        let Some(n) = self.core.table.get_mut(idx) else {
            return 0;
        };
        n.val.flags |= IN_BUCKET;
        let (ticket, prio) = (n.val.own.ticket, n.val.own.priority);
        let key = self.fairness.as_ref().map_or(0, |f| f(&n.key));
        let fair = self.fairness.is_some();
        let bucket = self
            .buckets
            .entry(Reverse(prio))
            .or_insert_with(|| Bucket::new(fair));
        bucket.push((ticket, idx), key);
        self.core.take_waiter()
    }

    /// The item in `idx` becomes ready: counted in `len` and the metrics (queued at `at`,
    /// see `Core::count_add`), and put in its bucket unless it is being processed.
    fn become_ready(&mut self, idx: u32, at: u64) -> usize {
        self.new_ticket(idx);
        let Some(n) = self.core.table.get_mut(idx) else {
            return 0;
        };
        n.val.ready_tick = None;
        let (flags, prio) = (n.val.flags, n.val.own.priority);
        self.ready += 1;
        self.core.count_add(idx, prio, at);
        if flags & PROCESSING == 0 {
            self.push_bucket(idx)
        } else {
            0
        }
    }

    /// `AddWithOpts` for one key, recording `trigger` in its slot: returns the key when it
    /// was not stored, and what to do after unlocking.
    fn add<K: KeyArg<T>>(
        &mut self,
        hash: u64,
        key: K,
        (prio, ready_at): (i32, Option<Instant>),
        trigger: Option<Cow<'_, Trigger>>,
    ) -> (Option<K>, AddResult) {
        if self.core.shutting_down {
            return (Some(key), (0, (false, false)));
        }
        if ready_at.is_some() {
            self.core.count_retry();
        }
        let (idx, rejected) = self.core.slot(hash, key);
        let ready = ready_at.map(|at| self.core.tick_of(at));
        (rejected, self.add_idx(idx, (prio, ready), trigger))
    }

    /// [`Self::add`] for a key in slot `idx`, ready now or in delay tick `ready`.
    fn add_idx(
        &mut self,
        idx: u32,
        (prio, ready): (i32, Option<NonZeroU64>),
        trigger: Option<Cow<'_, Trigger>>,
    ) -> AddResult {
        let Some(n) = self.core.table.get_mut(idx) else {
            return (0, (false, false));
        };
        let e = &mut n.val;
        if let Some(t) = trigger {
            e.own.triggers.push(t);
        }
        if e.flags & QUEUED == 0 {
            e.flags |= QUEUED;
            e.own.priority = prio;
            return match ready {
                None => (self.become_ready(idx, 0), (false, false)),
                Some(tick) => (0, self.core.delay(idx, tick)),
            };
        }
        let mut woken = 0;
        if prio > e.own.priority {
            let old = e.own.priority;
            e.own.priority = prio;
            if e.ready_tick.is_none() {
                let in_bucket = e.flags & IN_BUCKET != 0;
                if let Some(m) = &mut self.core.metrics {
                    m.note_depth(old, -1);
                    m.note_depth(prio, 1);
                }
                // A raised item goes to the back of its new priority; its old bucket
                // element goes stale (the ticket no longer matches).
                self.new_ticket(idx);
                if in_bucket {
                    woken += self.push_bucket(idx);
                }
            }
        }
        let cur = self.core.table.get(idx).and_then(|n| n.val.ready_tick);
        let mut timer = (false, false);
        if let Some(cur) = cur {
            match ready {
                None => woken += self.become_ready(idx, 0),
                Some(tick) if tick < cur => timer = self.core.delay(idx, tick),
                Some(_) => {}
            }
        }
        (woken, timer)
    }

    fn pop(&mut self, now: u64) -> Option<(T, i32)> {
        self.pop_slot(now).map(|(_, key, prio, _)| (key, prio))
    }

    /// [`Self::pop`], with the triggers recorded in the key's slot and the (ready, hand-out)
    /// stamps of its queue wait when the metrics took them.
    fn pop_triggered(&mut self, now: u64) -> Option<Popped<T>> {
        let (idx, key, prio, ready_at) = self.pop_slot(now)?;
        let triggers = std::mem::take(&mut self.core.table.get_mut(idx)?.val.own.triggers);
        let wait = (ready_at != 0 && now != 0).then_some((ready_at, now));
        Some((key, prio, triggers, wait))
    }

    /// Hands out the next ready item: its slot, key, priority and ready stamp.
    fn pop_slot(&mut self, now: u64) -> Option<(u32, T, i32, u64)> {
        let mut found = None;
        let mut emptied = None;
        for (prio, bucket) in self.buckets.iter_mut() {
            while let Some((ticket, idx)) = bucket.pop_front() {
                if let Some(n) = self.core.table.get(idx)
                    && n.val.own.ticket == ticket
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
        let n = self.core.table.get_mut(idx)?;
        n.val.flags &= !(IN_BUCKET | QUEUED);
        let prio = n.val.own.priority;
        self.ready -= 1;
        let (key, ready_at) = self.core.start_processing(idx, prio, now)?;
        Some((idx, key, prio, ready_at))
    }

    /// Takes the triggers recorded for `key` out of its slot.
    fn take_triggers(&mut self, hash: u64, key: &T) -> Kept {
        let slot = self.core.table.find(hash, key);
        let Some(n) = slot.and_then(|idx| self.core.table.get_mut(idx)) else {
            return Kept::None;
        };
        std::mem::take(&mut n.val.own.triggers)
    }

    fn done(&mut self, hash: u64, key: &T, now: u64) -> (usize, bool, Option<T>) {
        let Some(idx) = self.core.finish_processing(hash, key, now) else {
            return (0, false, None);
        };
        let mut woken = 0;
        let mut freed = None;
        match self
            .core
            .table
            .get(idx)
            .map(|n| (n.val.flags, n.val.ready_tick))
        {
            Some((f, None)) if f & QUEUED != 0 => woken = self.push_bucket(idx),
            Some((f, _)) if f & QUEUED == 0 => freed = self.core.table.remove(idx),
            _ => {}
        }
        (woken, self.core.drained(), freed)
    }
}

impl<T: QueueKey> QueueState<T> for State<T> {
    type KeyState = Prio;
    fn core(&self) -> &Core<T, Prio> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<T, Prio> {
        &mut self.core
    }
    fn add_now<K: KeyArg<T>>(&mut self, hash: u64, key: K) -> (Option<K>, usize) {
        let (rejected, (n, _)) = self.add(hash, key, (0, None), None);
        (rejected, n)
    }
    fn fire_slot(&mut self, idx: u32, at: u64) -> usize {
        let queued = self
            .core
            .table
            .get(idx)
            .is_some_and(|n| n.val.flags & QUEUED != 0);
        if queued {
            self.become_ready(idx, at)
        } else {
            0
        }
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
    /// Whether this handle records the triggers of its adds ([`Self::keeping_triggers`]).
    triggers: bool,
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            triggers: self.triggers,
        }
    }
}

impl<T: QueueKey> PriorityQueue<T> {
    /// A priority queue named `cfg.name` (the `name`/`controller` metric label), with
    /// `cfg.rate_limiter` for rate-limited adds (default: per-item exponential 5 ms ..
    /// 1000 s) and metrics from `cfg.metrics` (default: none).
    pub fn new(cfg: QueueConfig<T>) -> Self {
        Self::build(cfg, None)
    }

    /// [`PriorityQueue::new`], handing out the ready items of one priority fairly
    /// across the keys `fairness` extracts (round-robin by key, FIFO within a key;
    /// controller-runtime PR #3261), so one busy key cannot starve the others.
    pub fn with_fairness(cfg: QueueConfig<T>, fairness: FairnessFn<T>) -> Self {
        Self::build(cfg, Some(fairness))
    }

    fn build(cfg: QueueConfig<T>, fairness: Option<FairnessFn<T>>) -> Self {
        let metrics = QueueMetrics::new(cfg.metrics, &cfg.name, true);
        let limiter = cfg.rate_limiter.unwrap_or_else(default_item_rate_limiter);
        let state = State {
            core: Core::new(metrics),
            buckets: BTreeMap::new(),
            fairness,
            next_ticket: 0,
            ready: 0,
        };
        Self {
            inner: Shared::new(state, limiter),
            triggers: false,
        }
    }

    /// A handle to this same queue that keeps triggers: its
    /// [`add_triggered`](Queue::add_triggered) records the trigger in the key's slot,
    /// [`take_triggers`](Queue::take_triggers) hands the set over. Other handles drop
    /// triggers, as a queue that keeps none does.
    pub fn keeping_triggers(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            triggers: true,
        }
    }

    /// Adds `items` with `opts` (controller-runtime's `AddWithOpts`). With both `after` and
    /// `rate_limited`, the shorter of the two delays applies. A positive delay counts as a
    /// retry in the metrics.
    pub fn add_with_opts(&self, opts: AddOpts, items: impl IntoIterator<Item = T>) {
        let mut wake_n = 0;
        let mut timer = (false, false);
        for key in items {
            let (n, t) = self.add_one(opts, key, None);
            wake_n += n;
            timer = (timer.0 | t.0, timer.1 | t.1);
        }
        self.inner.wake_getters(wake_n);
        self.inner.timer(timer);
    }

    /// One key of [`add_with_opts`](Self::add_with_opts), recording `trigger`; returns
    /// what to do once the lock is released.
    fn add_one(&self, opts: AddOpts, key: T, trigger: Option<Trigger>) -> AddResult {
        let mut after = opts.after.unwrap_or(Duration::ZERO);
        if opts.rate_limited {
            let rl = self.inner.limiter.when(&key);
            if after.is_zero() || rl < after {
                after = rl;
            }
        }
        let ready_at = (!after.is_zero()).then(|| Instant::now() + after);
        let hash = self.inner.hash(&key);
        let prio = (opts.priority.unwrap_or(0), ready_at);
        // The guard is a temporary: a key the queue did not store is dropped after the lock
        // is released.
        let trigger = trigger.map(Cow::Owned);
        let (rejected, res) = self.inner.state.lock().add(hash, Owned(key), prio, trigger);
        drop(rejected);
        res
    }

    /// [`add_ref`](Self::add_ref) with `trigger`, recorded when this handle keeps triggers
    /// ([`keeping_triggers`](Self::keeping_triggers)): a dedup hit allocates nothing, and
    /// the trigger is cloned only when the key's set stores it or takes its newer object.
    pub fn add_ref_triggered<Q>(&self, item: &Q, trigger: &Trigger)
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = T>,
    {
        let hash = self.inner.hash(item);
        let trigger = self.triggers.then_some(Cow::Borrowed(trigger));
        let (_, (n, _)) = self
            .inner
            .state
            .lock()
            .add(hash, Borrowed(item), (0, None), trigger);
        self.inner.wake_getters(n);
    }

    /// [`Queue::add_triggered`] of an owned or a borrowed trigger (recorded when this handle
    /// keeps triggers): a source's add, with no delay, goes straight to the slot.
    fn add_cow(&self, opts: AddOpts, item: T, trigger: Cow<'_, Trigger>) {
        let trigger = self.triggers.then_some(trigger);
        if opts.rate_limited || opts.after.is_some_and(|d| !d.is_zero()) {
            let trigger = trigger.map(Cow::into_owned);
            let (n, timer) = self.add_one(opts, item, trigger);
            self.inner.wake_getters(n);
            self.inner.timer(timer);
            return;
        }
        let hash = self.inner.hash(&item);
        let prio = (opts.priority.unwrap_or(0), None);
        let (rejected, (n, _)) = self
            .inner
            .state
            .lock()
            .add(hash, Owned(item), prio, trigger);
        drop(rejected);
        self.inner.wake_getters(n);
    }

    /// Adds `item` now with priority 0.
    pub fn add(&self, item: T) {
        self.inner.add(self.inner.hash(&item), Owned(item));
    }

    /// Adds the key `item` borrows from (`&str` for `String` keys) now with priority 0,
    /// exactly as [`add`](Self::add) would add the owned key, but clones it only when the
    /// queue does not hold it yet: a dedup hit allocates and frees nothing.
    pub fn add_ref<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = T>,
    {
        self.inner.add_ref(item)
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
        self.inner.get(State::pop).await
    }

    /// [`get_with_priority`](Self::get_with_priority), with the key's triggers taken under
    /// the same lock (`None` unless this handle keeps triggers:
    /// [`keeping_triggers`](Self::keeping_triggers)).
    pub async fn get_triggered(&self) -> Option<(T, i32, Option<Triggers>)> {
        if !self.triggers {
            let (key, prio) = self.get_with_priority().await?;
            return Some((key, prio, None));
        }
        let (key, prio, kept, wait) = self.inner.get(State::pop_triggered).await?;
        Some((key, prio, kept.into_triggers(wait)))
    }

    /// Like [`get_with_priority`](Self::get_with_priority) without the priority.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(t, _)| t)
    }

    /// Marks `item` as done; if it was re-added while processed, it is ready again.
    pub fn done(&self, item: &T) {
        let now = self.inner.now();
        let hash = self.inner.hash(item);
        let (n, drained, freed) = self.inner.state.lock().done(hash, item, now);
        drop(freed);
        self.inner.after_done(n, drained);
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
    fn add_triggered(&self, opts: AddOpts, item: T, trigger: Trigger) {
        self.add_cow(opts, item, Cow::Owned(trigger))
    }
    fn add_triggered_ref(&self, opts: AddOpts, item: T, trigger: &Trigger) {
        self.add_cow(opts, item, Cow::Borrowed(trigger))
    }
    fn records_triggers(&self) -> bool {
        self.triggers
    }
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        if !self.triggers {
            return None;
        }
        let hash = self.inner.hash(item);
        let taken = self.inner.state.lock().take_triggers(hash, item);
        taken.into_triggers(None)
    }
    fn keeping_triggers(&self) -> Option<Arc<dyn Queue<T>>> {
        Some(Arc::new(PriorityQueue::keeping_triggers(self)))
    }
    fn get_boxed(&self) -> BoxFuture<'_, Option<(T, i32)>> {
        Box::pin(self.get_with_priority())
    }
    fn get_triggered_boxed(&self) -> BoxFuture<'_, Option<(T, i32, Option<Triggers>)>> {
        Box::pin(self.get_triggered())
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
