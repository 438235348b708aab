//! [`RateLimitingQueue`]: client-go's queue, delaying queue and rate-limiting queue in one
//! type (`workqueue.NewTypedRateLimitingQueueWithConfig`).
//!
//! The state machine is in `super::queue`, delays in `super::delaying`, limiters in
//! `super::rate_limiter`, metrics in `super::metrics`. One `parking_lot::Mutex` guards the
//! whole state; `get` waiters are woken one per ready item.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::metrics::QueueMetrics;
use super::queue::State;
use super::rate_limiter::default_controller_rate_limiter;
use super::shared::Shared;
use super::table::Owned;
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
        Self {
            inner: Shared::new(State::new(metrics), limiter),
        }
    }

    /// Adds `item`: a no-op if it is already queued, deferred until `done` if it is being
    /// processed, ignored after shutdown.
    pub fn add(&self, item: T) {
        self.inner.add(self.inner.hash(&item), Owned(item));
    }

    /// Adds the key `item` borrows from (`&str` for `String` keys) exactly as
    /// [`add`](Self::add) would add the owned key, but clones it only when the queue does
    /// not hold it yet: a dedup hit allocates and frees nothing.
    pub fn add_ref<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = T>,
    {
        self.inner.add_ref(item)
    }

    /// Adds `item` once `delay` has passed; a zero delay adds at once. Of several pending
    /// delays for one item the earliest wins. Counts as a retry in the metrics.
    pub fn add_after(&self, item: T, delay: Duration) {
        let hash = self.inner.hash(&item);
        if delay.is_zero() {
            let mut s = self.inner.state.lock();
            if !s.core.shutting_down {
                s.core.count_retry();
            }
            let (rejected, n) = s.add(hash, Owned(item));
            drop(s);
            drop(rejected);
            self.inner.wake_getters(n);
            return;
        }
        let at = Instant::now() + delay;
        let (rejected, timer) = self.inner.state.lock().add_after(hash, Owned(item), at);
        drop(rejected);
        self.inner.timer(timer);
    }

    /// Adds `item` after the delay its rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        let d = self.inner.limiter.when(&item);
        self.add_after(item, d);
    }

    /// Waits for the next item and marks it as being processed; `None` once the queue is
    /// shut down and empty.
    pub async fn get(&self) -> Option<T> {
        self.inner.get(State::pop).await
    }

    /// Marks `item` as done; if it was re-added while processed, it is queued again.
    pub fn done(&self, item: &T) {
        let now = self.inner.now();
        let hash = self.inner.hash(item);
        let res = self.inner.state.lock().done(hash, item, now);
        drop(res.freed);
        self.inner.after_done(res.wake, res.drained);
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
