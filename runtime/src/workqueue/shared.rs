//! What [`super::RateLimitingQueue`] and [`super::PriorityQueue`] share around their own
//! state machines: the lock, the waiting of `get`, shutdown and drain, the timer task,
//! the rate limiter and the metric handles used outside the lock.

use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Weak};

use hashbrown::DefaultHashBuilder;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::RateLimiter;
use super::delaying::{TimerTarget, spawn_timer};
use super::metrics::{Histograms, QueueMetrics, UnfinishedWork, register_unfinished_work};
use super::queue::{now_ns, secs_between, take_or_wait, wake};

/// The part of a queue's state the shared machinery needs.
pub(crate) trait WaitState: Send + 'static {
    /// Whether shutdown began.
    fn shutting_down(&self) -> bool;
    /// Counts one more `get` waiter to wake on the next add.
    fn register_idle(&mut self);
    /// Items handed out and not done yet.
    fn processing(&self) -> usize;
    /// Starts shutdown: adds are ignored from now on, delays are dropped, the idle count
    /// is reset (every waiter is woken).
    fn begin_shutdown(&mut self, drain: bool);
    /// The processing start timestamps of in-flight items (metrics only).
    fn processing_starts(&self) -> Vec<u64>;
    /// The metric handles kept under the lock, if any.
    fn metrics(&self) -> Option<&QueueMetrics>;
}

/// A queue's lock and everything around it.
pub(crate) struct Shared<S, T> {
    pub(crate) state: Mutex<S>,
    notify: Notify,
    drained: Notify,
    timer_wake: Arc<Notify>,
    pub(crate) limiter: Arc<dyn RateLimiter<T>>,
    metrics_on: bool,
    /// The key table's hasher: keys are hashed before the lock is taken.
    hasher: DefaultHashBuilder,
    hists: Option<Arc<Histograms>>,
}

impl<S, T> Drop for Shared<S, T> {
    fn drop(&mut self) {
        // Let the timer task notice that the queue is gone.
        self.timer_wake.notify_one();
    }
}

impl<S: WaitState, T: Send + Sync + 'static> Shared<S, T>
where
    Shared<S, T>: TimerTarget,
{
    /// Wraps `state`; registers with the unfinished-work updater when metrics are on.
    pub(crate) fn new(
        state: S,
        hasher: DefaultHashBuilder,
        limiter: Arc<dyn RateLimiter<T>>,
    ) -> Arc<Self> {
        let hists = state.metrics().map(|m| Arc::clone(&m.hists));
        let metrics_on = hists.is_some();
        let shared = Arc::new(Self {
            state: Mutex::new(state),
            notify: Notify::new(),
            drained: Notify::new(),
            timer_wake: Arc::new(Notify::new()),
            limiter,
            metrics_on,
            hasher,
            hists,
        });
        if metrics_on {
            let weak: Weak<dyn UnfinishedWork> =
                Arc::downgrade(&shared) as Weak<dyn UnfinishedWork>;
            register_unfinished_work(weak);
        }
        shared
    }

    /// A metrics timestamp, or 0 when the queue has no metrics.
    pub(crate) fn now(&self) -> u64 {
        if self.metrics_on { now_ns() } else { 0 }
    }

    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Waits until `pop` yields an item (with its queue latency for the metrics), or the
    /// queue is shut down and `pop` yields nothing.
    pub(crate) async fn get<R>(
        &self,
        mut pop: impl FnMut(&mut S, u64) -> Option<(R, Option<f64>)>,
    ) -> Option<R> {
        let (item, latency) = take_or_wait(&self.notify, |register| {
            let now = self.now();
            let mut s = self.state.lock();
            if let Some(got) = pop(&mut s, now) {
                return Some(Some(got));
            }
            if s.shutting_down() {
                return Some(None);
            }
            if register {
                s.register_idle();
            }
            None
        })
        .await?;
        if let (Some(v), Some(h)) = (latency, &self.hists) {
            h.latency.observe(v);
        }
        Some(item)
    }

    /// After an add or a timer tick, once the lock is released: wake `n` waiters.
    pub(crate) fn wake_getters(&self, n: usize) {
        wake(&self.notify, n);
    }

    /// After `done`, once the lock is released: record the work duration, wake waiters and
    /// a draining `shut_down_with_drain`.
    pub(crate) fn after_done(&self, wake_n: usize, drained: bool, work_secs: Option<f64>) {
        if let (Some(v), Some(h)) = (work_secs, &self.hists) {
            h.work_duration.observe(v);
        }
        wake(&self.notify, wake_n);
        if drained {
            self.drained.notify_waiters();
        }
    }

    /// After an add with a delay: start the timer task on the first delay, or wake it when
    /// the new deadline is earlier than the one it sleeps towards.
    pub(crate) fn timer(self: &Arc<Self>, start: bool, wake_timer: bool) {
        if start {
            let target: Weak<dyn TimerTarget> = Arc::downgrade(self) as Weak<dyn TimerTarget>;
            spawn_timer(target, Arc::clone(&self.timer_wake));
        } else if wake_timer {
            self.timer_wake.notify_one();
        }
    }

    /// Shuts down: adds are ignored, delays dropped, every waiter woken.
    pub(crate) fn shut_down(&self, drain: bool) {
        self.state.lock().begin_shutdown(drain);
        self.notify.notify_waiters();
        self.timer_wake.notify_one();
    }

    /// Shuts down and waits until every item handed out is done.
    pub(crate) async fn shut_down_with_drain(&self) {
        self.shut_down(true);
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().processing() == 0 {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn shutting_down(&self) -> bool {
        self.state.lock().shutting_down()
    }
}

impl<S: WaitState, T: Send + Sync + 'static> UnfinishedWork for Shared<S, T> {
    fn update_unfinished_work(&self, _now: std::time::Instant) {
        let now = now_ns();
        let s = self.state.lock();
        let mut total = 0.0;
        let mut oldest = 0.0f64;
        for start in s.processing_starts() {
            let age = secs_between(start, now);
            total += age;
            oldest = oldest.max(age);
        }
        if let Some(m) = s.metrics() {
            m.unfinished.set(total);
            m.longest.set(oldest);
        }
    }
}
