//! Keeping triggers through a queue: [`Triggered`], a decorator around any [`Queue`] that
//! holds the [`Triggers`] of each queued key, and [`Stamped`], the view a source hands its
//! handler so that every add it makes carries the event's [`Trigger`].
//!
//! The sets live beside the queue, not in its core: the queue's state machines
//! (`super::queue`, `super::priority`) stay as they are, and a queue without triggers
//! pays nothing. A trigger is recorded before the key is added, and the set is taken right
//! after `get` hands the key out, so no add is lost between the two: an add racing a `get`
//! lands in this round's set (the reconcile reads the cache after the event it names) or
//! in the next one's.
//!
//! Delays: a trigger added with a delay (`requeue_after`, an explicit `add_after`) waits
//! apart until the key is next handed out. The priority queue keeps one ready time per key,
//! the earliest, so whenever it hands the key out every pending deadline of the key is
//! merged into that hand-out: all waiting triggers join the set. The plain queue (client-go's
//! delaying queue) still fires a later deadline on its own, so only those whose deadline
//! has passed join; the rest wait for their round. A rate-limited add's delay is the
//! limiter's, unknown here, so its trigger joins at once.

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashMap;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::triggers::{MAX_TRIGGERS, Trigger, Triggers};
use super::{AddOpts, Queue, QueueKey};

/// A key's triggers: those that count now, and those waiting for their delay.
#[derive(Default)]
struct Pending {
    /// When the first trigger of this round was recorded.
    since: Option<Instant>,
    ready: Triggers,
    delayed: Vec<(Instant, Trigger)>,
}

/// A [`Queue`] that keeps, for each queued key, the [`Triggers`] of the adds that queued
/// it ([`Queue::add_triggered`]); [`Queue::take_triggers`] hands them over when the key
/// is taken. Every other call goes to the wrapped queue.
pub struct Triggered<T> {
    inner: Arc<dyn Queue<T>>,
    pending: Mutex<HashMap<T, Pending>>,
}

impl<T: QueueKey> Triggered<T> {
    /// Keeps the triggers of `inner`'s keys.
    pub fn new(inner: Arc<dyn Queue<T>>) -> Self {
        Self {
            inner,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Records `trigger` for `item`, due after `delay` (if any and non-zero).
    fn record(&self, item: &T, delay: Option<Duration>, trigger: Trigger) {
        let mut map = self.pending.lock();
        let p = match map.get_mut(item) {
            Some(p) => p,
            None => map.entry(item.clone()).or_default(),
        };
        let now = Instant::now();
        p.since.get_or_insert(now);
        match delay.filter(|d| !d.is_zero()) {
            None => p.ready.push(trigger),
            Some(_) if p.delayed.len() >= MAX_TRIGGERS => p.ready.push_dropped(trigger),
            Some(d) => p.delayed.push((now + d, trigger)),
        }
    }
}

impl<T: QueueKey> Queue<T> for Triggered<T> {
    fn add(&self, item: T) {
        self.inner.add(item)
    }
    fn add_after(&self, item: T, delay: Duration) {
        self.inner.add_after(item, delay)
    }
    fn add_rate_limited(&self, item: T) {
        self.inner.add_rate_limited(item)
    }
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        self.inner.add_with_opts(opts, item)
    }
    fn add_triggered(&self, opts: AddOpts, item: T, trigger: Trigger) {
        self.record(&item, opts.after, trigger);
        self.inner.add_with_opts(opts, item)
    }
    fn records_triggers(&self) -> bool {
        true
    }
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        let mut map = self.pending.lock();
        let p = map.get_mut(item)?;
        let now = Instant::now();
        let mut taken = std::mem::take(&mut p.ready);
        let all = self.inner.is_priority();
        for (due, t) in std::mem::take(&mut p.delayed) {
            if all || due <= now {
                taken.push(t);
            } else {
                p.delayed.push((due, t));
            }
        }
        if let Some(since) = p.since.take() {
            taken.set_waited(now.saturating_duration_since(since));
        }
        if p.delayed.is_empty() {
            map.remove(item);
        } else {
            p.since = Some(now);
        }
        Some(taken)
    }
    super::forward_queue!(T, |q| q.inner);
}

/// A view of a queue whose adds all carry one [`Trigger`] (through
/// [`Queue::add_triggered`]); what a source hands its event handler for one event.
/// `Q` is the queue: `&dyn Queue<T>` or `Arc<dyn Queue<T>>`.
pub struct Stamped<Q, T> {
    inner: Q,
    trigger: Trigger,
    key: PhantomData<fn(T)>,
}

impl<Q: Borrow<dyn Queue<T>>, T: QueueKey> Stamped<Q, T> {
    /// `inner`, with `trigger` on every add.
    pub fn new(inner: Q, trigger: Trigger) -> Self {
        Self {
            inner,
            trigger,
            key: PhantomData,
        }
    }

    fn q(&self) -> &dyn Queue<T> {
        self.inner.borrow()
    }
}

impl<Q, T> Queue<T> for Stamped<Q, T>
where
    Q: Borrow<dyn Queue<T>> + Send + Sync,
    T: QueueKey,
{
    fn add(&self, item: T) {
        self.add_with_opts(AddOpts::default(), item)
    }
    fn add_after(&self, item: T, delay: Duration) {
        let opts = AddOpts {
            after: Some(delay),
            ..AddOpts::default()
        };
        self.add_with_opts(opts, item)
    }
    fn add_rate_limited(&self, item: T) {
        let opts = AddOpts {
            rate_limited: true,
            ..AddOpts::default()
        };
        self.add_with_opts(opts, item)
    }
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        self.q().add_triggered(opts, item, self.trigger.clone())
    }
    fn add_triggered(&self, opts: AddOpts, item: T, trigger: Trigger) {
        self.q().add_triggered(opts, item, trigger)
    }
    fn records_triggers(&self) -> bool {
        self.q().records_triggers()
    }
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        self.q().take_triggers(item)
    }
    super::forward_queue!(T, |q| q.q());
}
