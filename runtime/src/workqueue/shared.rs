//! What [`super::RateLimitingQueue`] and [`super::PriorityQueue`] share around their own
//! state machines: the lock, the waiting of `get`, shutdown and drain, the timer task's
//! firing loop and the rate limiter.
//!
//! The state under the lock is a [`QueueState`] (see `super::core`); everything here is
//! generic over it, so the two queues differ only in how they order ready items.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Weak};

use hashbrown::DefaultHashBuilder;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::core::QueueState;
use super::delaying::{TimerTarget, spawn_timer};
use super::metrics::{UnfinishedWork, now_ticks, register_unfinished_work, secs_between};
use super::table::{Borrowed, KeyArg};
use super::{QueueKey, RateLimiter};

/// How many due items the timer moves per lock hold before it lets getters and adders in
/// (a hold of a few hundred microseconds at most). Each hand-off to a parked waiter costs
/// two context switches: with 256 the S4 bench spent 98-108 ms CPU (plain) and 114-140 ms
/// (priority), with 2048 82-94 ms and 99-113 ms, and items were handed out closer to
/// their deadlines; 32 took 153 ms.
const FIRE_BATCH: usize = 2048;

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
}

impl<S, T> Drop for Shared<S, T> {
    fn drop(&mut self) {
        // Let the timer task notice that the queue is gone.
        self.timer_wake.notify_one();
    }
}

impl<S: QueueState<T>, T: QueueKey> Shared<S, T> {
    /// Wraps `state`; registers with the unfinished-work updater when metrics are on.
    pub(crate) fn new(state: S, limiter: Arc<dyn RateLimiter<T>>) -> Arc<Self> {
        let core = state.core();
        let hasher = core.table.hasher().clone();
        let metrics_on = core.metrics.is_some();
        let shared = Arc::new(Self {
            state: Mutex::new(state),
            notify: Notify::new(),
            drained: Notify::new(),
            timer_wake: Arc::new(Notify::new()),
            limiter,
            metrics_on,
            hasher,
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
        if self.metrics_on { now_ticks() } else { 0 }
    }

    /// The hash of `key` in the key table (computed before the lock is taken).
    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// `add` of an owned key, or of a borrowed one ([`Borrowed`], cloned only if stored).
    pub(crate) fn add<K: KeyArg<T>>(&self, hash: u64, key: K) {
        let (rejected, n) = self.state.lock().add_now(hash, key);
        drop(rejected);
        self.wake_getters(n);
    }

    /// `add_ref`: adds the key `item` borrows from, cloning it only when it is stored.
    pub(crate) fn add_ref<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: ?Sized + Hash + Eq + ToOwned<Owned = T>,
    {
        self.add(self.hash(item), Borrowed(item));
    }

    /// Waits until `pop` yields an item, or the queue is shut down and `pop` yields
    /// nothing. `pop` gets the metrics timestamp of the attempt, read before the lock is
    /// taken so the clock read does not lengthen the hold.
    pub(crate) async fn get<R>(&self, mut pop: impl FnMut(&mut S, u64) -> Option<R>) -> Option<R> {
        take_or_wait(&self.notify, |register| {
            let now = self.now();
            let mut s = self.state.lock();
            if let Some(got) = pop(&mut s, now) {
                return Some(Some(got));
            }
            let core = s.core_mut();
            if core.shutting_down {
                return Some(None);
            }
            if register {
                core.register_idle();
            }
            None
        })
        .await
    }

    /// After an add or a timer tick, once the lock is released: wake `n` waiters.
    pub(crate) fn wake_getters(&self, n: usize) {
        for _ in 0..n {
            self.notify.notify_one();
        }
    }

    /// After `done`, once the lock is released: wake waiters and a draining
    /// `shut_down_with_drain`.
    pub(crate) fn after_done(&self, wake_n: usize, drained: bool) {
        self.wake_getters(wake_n);
        if drained {
            self.drained.notify_waiters();
        }
    }

    /// After an add with a delay: start the timer task on the first delay, or wake it when
    /// the new deadline is earlier than the one it sleeps towards.
    pub(crate) fn timer(self: &Arc<Self>, (start, wake_timer): (bool, bool)) {
        if start {
            let target: Weak<dyn TimerTarget> = Arc::downgrade(self) as Weak<dyn TimerTarget>;
            spawn_timer(target, Arc::clone(&self.timer_wake));
        } else if wake_timer {
            self.timer_wake.notify_one();
        }
    }

    /// Shuts down: adds are ignored, delays dropped, every waiter woken.
    pub(crate) fn shut_down(&self, drain: bool) {
        self.state.lock().core_mut().begin_shutdown(drain);
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
            if self.state.lock().core().processing() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Whether the queue is shutting down.
    pub(crate) fn shutting_down(&self) -> bool {
        self.state.lock().core().shutting_down
    }
}

impl<S: QueueState<T>, T: QueueKey> TimerTarget for Shared<S, T> {
    fn fire(&self, now: Instant) -> Option<Option<Instant>> {
        let mut s = self.state.lock();
        if s.core().shutting_down {
            return None;
        }
        let mut woken = 0;
        let mut moved = 0usize;
        // One timestamp for the queue wait of every item a batch makes ready.
        let mut at = self.now();
        while let Some((tick, idx)) = s.core_mut().delays.pop_due(now) {
            if s.core().due(tick, idx) {
                woken += s.fire_slot(idx, at);
            }
            moved += 1;
            if moved.is_multiple_of(FIRE_BATCH) {
                // Long batches: let getters start and let blocked adders in.
                self.wake_getters(std::mem::take(&mut woken));
                parking_lot::MutexGuard::bump(&mut s);
                at = self.now();
            }
        }
        let next = s.core_mut().delays.arm();
        drop(s);
        self.wake_getters(woken);
        Some(next)
    }
}

impl<S: QueueState<T>, T: QueueKey> UnfinishedWork for Shared<S, T> {
    fn flush_metrics(&self) {
        if let Some(m) = &mut self.state.lock().core_mut().metrics {
            m.flush();
        }
    }

    fn update_unfinished_work(&self, _now: std::time::Instant) {
        let now = now_ticks();
        let s = self.state.lock();
        let core = s.core();
        let mut total = 0.0;
        let mut oldest = 0.0f64;
        for start in core.processing_starts() {
            let age = secs_between(start, now);
            total += age;
            oldest = oldest.max(age);
        }
        if let Some(m) = &core.metrics {
            m.unfinished.set(total);
            m.longest.set(oldest);
        }
    }
}

/// `get`'s wait: tries `attempt(false)`; if it yields nothing, registers interest in
/// `notify`, tries again with `attempt(true)` (which must count itself as an idle waiter
/// under the queue lock when it yields nothing) and sleeps until notified. Adders wake one
/// idle waiter each (`notify_one`), so no wakeup is lost and no thundering herd forms.
async fn take_or_wait<R>(notify: &Notify, mut attempt: impl FnMut(bool) -> Option<R>) -> R {
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
