//! [`RateLimitingQueue`]: client-go's queue, delaying queue and rate-limiting queue in one
//! type (`workqueue.NewTypedRateLimitingQueueWithConfig`).
//!
//! The state machine is in `super::queue`, delays in `super::delaying`, limiters in
//! `super::rate_limiter`, metrics in `super::metrics`. One `parking_lot::Mutex` guards the
//! whole state; `get` waiters are woken one per ready item.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use hashbrown::DefaultHashBuilder;
use parking_lot::Mutex;
use std::hash::BuildHasher;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::delaying::{TimerTarget, spawn_timer};
use super::metrics::{Histograms, QueueMetrics, UnfinishedWork, register_unfinished_work};
use super::queue::{After, State, now_ns, take_or_wait, wake};
use super::rate_limiter::default_controller_rate_limiter;
use super::{Queue, QueueConfig, QueueKey, RateLimiter};

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
    inner: Arc<Inner<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    drained: Notify,
    timer_wake: Arc<Notify>,
    limiter: Arc<dyn RateLimiter<T>>,
    metrics_on: bool,
    /// The key table's hasher: keys are hashed before the lock is taken.
    hasher: DefaultHashBuilder,
    hists: Option<Arc<Histograms>>,
    self_ref: Weak<Inner<T>>,
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // Let the timer task notice that the queue is gone.
        self.timer_wake.notify_one();
    }
}

impl<T: QueueKey> RateLimitingQueue<T> {
    /// A queue named `cfg.name` (the `name`/`controller` metric label), rate-limited by
    /// `cfg.rate_limiter` (default: [`default_controller_rate_limiter`]), with metrics from
    /// `cfg.metrics` (default: none).
    pub fn new(cfg: QueueConfig<T>) -> Self {
        let metrics = QueueMetrics::new(cfg.metrics, &cfg.name, false);
        let metrics_on = metrics.is_some();
        let hists = metrics.as_ref().map(|m| Arc::clone(&m.hists));
        let limiter = cfg
            .rate_limiter
            .unwrap_or_else(default_controller_rate_limiter);
        let state = State::new(metrics);
        let hasher = state.table.hasher().clone();
        let inner = Arc::new_cyclic(|w| Inner {
            state: Mutex::new(state),
            hasher,
            notify: Notify::new(),
            drained: Notify::new(),
            timer_wake: Arc::new(Notify::new()),
            limiter,
            metrics_on,
            hists,
            self_ref: w.clone(),
        });
        if metrics_on {
            let weak: Weak<dyn UnfinishedWork> = Arc::downgrade(&inner) as Weak<dyn UnfinishedWork>;
            register_unfinished_work(weak);
        }
        Self { inner }
    }

    fn now(&self) -> u64 {
        if self.inner.metrics_on { now_ns() } else { 0 }
    }

    /// Adds `item`: a no-op if it is already queued, deferred until `done` if it is being
    /// processed, ignored after shutdown.
    pub fn add(&self, item: T) {
        let hash = self.inner.hasher.hash_one(&item);
        let (rejected, n) = self.inner.state.lock().add(hash, item);
        drop(rejected);
        wake(&self.inner.notify, n);
    }

    /// Adds `item` once `delay` has passed; a zero delay adds at once. Of several pending
    /// delays for one item the earliest wins. Counts as a retry in the metrics.
    pub fn add_after(&self, item: T, delay: Duration) {
        let mut s = self.inner.state.lock();
        if s.shutting_down {
            return;
        }
        if let Some(m) = &s.metrics {
            m.retries.inc();
        }
        if delay.is_zero() {
            let hash = s.table.hash(&item);
            let (rejected, n) = s.add(hash, item);
            drop(s);
            drop(rejected);
            wake(&self.inner.notify, n);
            return;
        }
        let at = Instant::now() + delay;
        let hash = s.table.hash(&item);
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
        if start {
            let target: Weak<dyn TimerTarget> =
                self.inner.self_ref.clone() as Weak<dyn TimerTarget>;
            spawn_timer(target, Arc::clone(&self.inner.timer_wake));
        } else if wake_timer {
            self.inner.timer_wake.notify_one();
        }
    }

    /// Adds `item` after the delay its rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        let d = self.inner.limiter.when(&item);
        self.add_after(item, d);
    }

    /// Waits for the next item and marks it as being processed; `None` once the queue is
    /// shut down and empty.
    pub async fn get(&self) -> Option<T> {
        let inner = &*self.inner;
        let metrics_on = inner.metrics_on;
        let (item, latency) = take_or_wait(&inner.notify, |register| {
            let now = if metrics_on { now_ns() } else { 0 };
            let mut s = inner.state.lock();
            if let Some(got) = s.pop(now) {
                return Some(Some(got));
            }
            if s.shutting_down {
                return Some(None);
            }
            if register {
                s.idle += 1;
            }
            None
        })
        .await?;
        if let (Some(v), Some(h)) = (latency, &inner.hists) {
            h.latency.observe(v);
        }
        Some(item)
    }

    /// Marks `item` as done; if it was re-added while processed, it is queued again.
    pub fn done(&self, item: &T) {
        let now = self.now();
        let hash = self.inner.hasher.hash_one(item);
        let mut s = self.inner.state.lock();
        let (
            After {
                wake: n,
                drained,
                observe,
            },
            freed,
        ) = s.done(hash, item, now);
        drop(s);
        drop(freed);
        if let (Some(v), Some(h)) = (observe, &self.inner.hists) {
            h.work_duration.observe(v);
        }
        wake(&self.inner.notify, n);
        if drained {
            self.inner.drained.notify_waiters();
        }
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
        {
            let mut s = self.inner.state.lock();
            s.shutting_down = true;
            s.idle = 0;
            // Pending delays are dropped (client-go stops its waiting loop); their slots
            // stay until the queue itself is dropped.
            s.delays.clear();
        }
        self.inner.notify.notify_waiters();
        self.inner.timer_wake.notify_one();
    }

    /// Shuts down like [`shut_down`](Self::shut_down), then waits until every item handed
    /// out has been marked done.
    pub async fn shut_down_with_drain(&self) {
        {
            self.inner.state.lock().draining = true;
        }
        self.shut_down();
        loop {
            let notified = self.inner.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.inner.state.lock().processing() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }
}

impl<T: QueueKey> TimerTarget for Inner<T> {
    fn fire(&self, now: Instant) -> Option<Option<Instant>> {
        let mut s = self.state.lock();
        if s.shutting_down {
            return None;
        }
        let mut n = 0;
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
        }
        let next = s.delays.arm();
        drop(s);
        wake(&self.notify, n);
        Some(next)
    }
}

impl<T: QueueKey> UnfinishedWork for Inner<T> {
    fn update_unfinished_work(&self, _now: std::time::Instant) {
        let now = now_ns();
        let s = self.state.lock();
        let (total, oldest) = s.unfinished(now);
        if let Some(m) = &s.metrics {
            m.unfinished.set(total);
            m.longest.set(oldest);
        }
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
