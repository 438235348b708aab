//! [`RateLimitingQueue`]: client-go's queue, delaying queue and rate-limiting queue in one
//! type (`workqueue.NewTypedRateLimitingQueueWithConfig`).
//!
//! The state machine is in `super::queue`, delays in `super::delaying`, limiters in
//! `super::rate_limiter`, metrics in `super::metrics`. One `parking_lot::Mutex` guards the
//! whole state; `get` waiters are woken one per ready item.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::delaying::TimerTarget;
use super::metrics::QueueMetrics;
use super::queue::State;
use super::rate_limiter::default_controller_rate_limiter;
use super::shared::Shared;
use super::{Queue, QueueConfig, QueueKey};

/// A work queue with client-go semantics: dedup, a processing set, delays and rate limits.
///
/// * An item is held at most once; adding it again while queued is a no-op.
/// * An item handed out by [`get`](Self::get) is not handed out again before
///   [`done`](Self::done); if it is re-added meanwhile, it is queued again at `done`.
/// * Otherwise FIFO. [`add_after`](Self::add_after) keeps the earliest of several pending
///   delays for one item; one timer task per queue drives all delays.
/// * After [`shut_down`](Self::shut_down) adds are ignored, pending delays dropped, and
///   `get` hands out what is still queued, then returns `None`.
///
/// Cloning is cheap and yields a handle to the same queue. Only delays need a tokio
/// runtime (see `super::delaying`).
pub struct RateLimitingQueue<T> {
    inner: Arc<Shared<State<T>, T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: QueueKey> RateLimitingQueue<T> {
    /// A queue named `cfg.name` (the `name`/`controller` metric label), rate-limited by
    /// `cfg.rate_limiter` (default: [`default_controller_rate_limiter`]), with metrics from
    /// `cfg.metrics` (default: none).
    pub fn new(cfg: QueueConfig<T>) -> Self {
        let metrics = QueueMetrics::new(cfg.metrics, &cfg.name, false);
        let limiter = cfg
            .rate_limiter
            .unwrap_or_else(default_controller_rate_limiter);
        let state = State::new(metrics);
        let hasher = state.table.hasher().clone();
        Self {
            inner: Shared::new(state, hasher, limiter),
        }
    }

    /// Adds `item`: a no-op if it is already queued, deferred until `done` if it is being
    /// processed, ignored after shutdown.
    pub fn add(&self, item: T) {
        let hash = self.inner.hash(&item);
        let (rejected, n) = self.inner.state.lock().add(hash, item);
        drop(rejected);
        self.inner.wake_getters(n);
    }

    /// Adds `item` once `delay` has passed; a zero delay adds at once. Of several pending
    /// delays for one item the earliest wins. Counts as a retry in the metrics.
    pub fn add_after(&self, item: T, delay: Duration) {
        let hash = self.inner.hash(&item);
        let mut s = self.inner.state.lock();
        if s.shutting_down {
            return;
        }
        if let Some(m) = &s.metrics {
            m.retries.inc();
        }
        if delay.is_zero() {
            let (rejected, n) = s.add(hash, item);
            drop(s);
            drop(rejected);
            self.inner.wake_getters(n);
            return;
        }
        let at = Instant::now() + delay;
        let idx = match s.table.find(hash, &item) {
            Some(idx) => idx,
            None => s.table.insert(hash, item, Default::default()),
        };
        let Some(node) = s.table.get_mut(idx) else {
            return;
        };
        if node.val.ready_at.is_some_and(|r| r <= at) {
            return;
        }
        node.val.ready_at = Some(at);
        let wake_timer = s.delays.push(at, idx);
        let start = !s.delays.started;
        s.delays.started = true;
        drop(s);
        self.inner.timer(start, wake_timer);
    }

    /// Adds `item` after the delay its rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        let d = self.inner.limiter.when(&item);
        self.add_after(item, d);
    }

    /// Waits for the next item and marks it as being processed; `None` once the queue is
    /// shut down and empty.
    pub async fn get(&self) -> Option<T> {
        self.inner.get(|s, now| s.pop(now)).await
    }

    /// Marks `item` as done; if it was re-added while processed, it is queued again.
    pub fn done(&self, item: &T) {
        let now = self.inner.now();
        let hash = self.inner.hash(item);
        let (after, freed) = self.inner.state.lock().done(hash, item, now);
        drop(freed);
        self.inner
            .after_done(after.wake, after.drained, after.observe);
    }

    /// Clears the rate limiter's memory of `item` (call it once `item` succeeded).
    pub fn forget(&self, item: &T) {
        self.inner.limiter.forget(item);
    }

    /// How many times `item` was rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.inner.limiter.num_requeues(item)
    }

    /// Number of items ready to be handed out (not delayed, not in flight).
    pub fn len(&self) -> usize {
        self.inner.state.lock().len()
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: adds are ignored, delayed items dropped, and `get` returns the
    /// items still queued, then `None`.
    pub fn shut_down(&self) {
        self.inner.shut_down(false);
    }

    /// Shuts down like [`shut_down`](Self::shut_down), then waits until every item handed
    /// out has been marked done.
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
            let st = &mut *s;
            let Some(node) = st.table.get_mut(idx) else {
                continue;
            };
            if node.val.ready_at.map(|r| st.delays.tick_of(r)) != Some(tick) {
                continue; // stale: an earlier delay already fired, or the slot was reused
            }
            node.val.ready_at = None;
            n += s.add_idx(idx);
            s.release_if_unused(idx);
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

impl<T: QueueKey> Queue<T> for RateLimitingQueue<T> {
    fn add(&self, item: T) {
        RateLimitingQueue::add(self, item)
    }
    fn add_after(&self, item: T, delay: Duration) {
        RateLimitingQueue::add_after(self, item, delay)
    }
    fn add_rate_limited(&self, item: T) {
        RateLimitingQueue::add_rate_limited(self, item)
    }
    fn get_boxed(&self) -> BoxFuture<'_, Option<(T, i32)>> {
        Box::pin(async move { self.get().await.map(|t| (t, 0)) })
    }
    fn done(&self, item: &T) {
        RateLimitingQueue::done(self, item)
    }
    fn forget(&self, item: &T) {
        RateLimitingQueue::forget(self, item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        RateLimitingQueue::num_requeues(self, item)
    }
    fn len(&self) -> usize {
        RateLimitingQueue::len(self)
    }
    fn shut_down(&self) {
        RateLimitingQueue::shut_down(self)
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Box::pin(RateLimitingQueue::shut_down_with_drain(self))
    }
    fn shutting_down(&self) -> bool {
        RateLimitingQueue::shutting_down(self)
    }
}
