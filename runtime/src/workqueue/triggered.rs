//! Keeping triggers through a queue: [`Triggered`], a decorator that makes any [`Queue`]
//! hold the [`Triggers`] of each queued key, and [`Stamped`], the view a source hands its
//! handler so that every add it makes carries the event's [`Trigger`].
//!
//! A queue that can keep the sets in its own key slots ([`Queue::keeping_triggers`]: the
//! priority queue, `super::priority`) does so: one lookup under one lock for the add and
//! its trigger, and [`Triggered`] only forwards to it. For any other queue (the plain queue,
//! a custom one) the sets live beside it, in a map of their own under a lock of their own.
//! Either way a queue without triggers pays nothing, and a trigger is recorded no later than
//! the key is added and the set taken right after `get` hands the key out, so no add is
//! lost between the two: an add racing a `get` lands in this round's set (the reconcile
//! reads the cache after the event it names) or in the next one's.
//!
//! Delays: a trigger added with a delay (`requeue_after`, an explicit `add_after`) waits
//! until the key is next handed out. The priority queue keeps one ready time per key, the
//! earliest, so whenever it hands the key out every pending deadline of the key is merged
//! into that hand-out: all its triggers join the set. The plain queue (client-go's delaying
//! queue) still fires a later deadline on its own, so beside it a delayed trigger waits
//! apart and joins only once its deadline has passed; the rest wait for their round. A
//! rate-limited add's delay is the limiter's, unknown here, so its trigger joins at once.

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use hashbrown::HashMap;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::triggers::{MAX_TRIGGERS, Trigger, Triggers};
use super::{AddOpts, Queue, QueueKey};

/// A key's triggers: those that count now, and those waiting for their delay.
#[derive(Default)]
struct Pending {
    /// When the first trigger of this round with no delay was recorded: when the key
    /// became ready, as far as this decorator can tell (a delayed trigger's key became
    /// ready at its deadline).
    since: Option<Instant>,
    ready: Triggers,
    delayed: Vec<(Instant, Trigger)>,
}

/// A [`Queue`] that keeps, for each queued key, the [`Triggers`] of the adds that queued
/// it ([`Queue::add_triggered`]); [`Queue::take_triggers`] hands them over when the key
/// is taken. Every other call goes to the wrapped queue.
pub struct Triggered<T> {
    inner: Arc<dyn Queue<T>>,
    /// The sets, when `inner` does not keep them itself.
    pending: Option<Mutex<HashMap<T, Pending>>>,
}

impl<T: QueueKey> Triggered<T> {
    /// Keeps the triggers of `inner`'s keys: in its own key slots when it can
    /// ([`Queue::keeping_triggers`]), else beside it.
    pub fn new(inner: Arc<dyn Queue<T>>) -> Self {
        match inner.keeping_triggers() {
            Some(keeping) => Self {
                inner: keeping,
                pending: None,
            },
            None => Self {
                inner,
                pending: Some(Mutex::new(HashMap::new())),
            },
        }
    }

    /// `inner` keeping triggers, as a queue: its own trigger-keeping handle when it has
    /// one (no decorator in between), else a [`Triggered`] around it.
    pub fn wrap(inner: Arc<dyn Queue<T>>) -> Arc<dyn Queue<T>> {
        inner
            .keeping_triggers()
            .unwrap_or_else(|| Arc::new(Self::new(inner)))
    }
}

/// Records `trigger` for `item` in `pending`, due after `delay` (if any and non-zero).
fn record<T: QueueKey>(
    pending: &Mutex<HashMap<T, Pending>>,
    item: &T,
    delay: Option<Duration>,
    trigger: Trigger,
) {
    let mut map = pending.lock();
    let p = match map.get_mut(item) {
        Some(p) => p,
        None => map.entry(item.clone()).or_default(),
    };
    // One clock read, and only when needed: a ready trigger of a round already started
    // reads none.
    match delay.filter(|d| !d.is_zero()) {
        None => {
            if p.since.is_none() {
                p.since = Some(Instant::now());
            }
            p.ready.push(trigger)
        }
        Some(_) if p.delayed.len() >= MAX_TRIGGERS => p.ready.push_dropped(trigger),
        Some(d) => p.delayed.push((Instant::now() + d, trigger)),
    }
}

/// Takes the triggers of `item` out of `pending`: the ready ones, and the delayed ones
/// whose deadline has passed (all of them when `all`: the priority queue merges every
/// pending deadline of a key into its hand-out).
fn take<T: QueueKey>(
    pending: &Mutex<HashMap<T, Pending>>,
    item: &T,
    all: bool,
) -> Option<Triggers> {
    let mut map = pending.lock();
    let p = map.get_mut(item)?;
    let now = Instant::now();
    let mut taken = std::mem::take(&mut p.ready);
    // The key became ready at its first undelayed trigger or its first deadline passed.
    let mut ready = p.since.take();
    for (due, t) in std::mem::take(&mut p.delayed) {
        if all || due <= now {
            taken.push(t);
            if due <= now {
                ready = Some(ready.map_or(due, |r| r.min(due)));
            }
        } else {
            p.delayed.push((due, t));
        }
    }
    if let Some(ready) = ready {
        taken.set_waited(now.saturating_duration_since(ready));
    }
    if p.delayed.is_empty() {
        map.remove(item);
    }
    Some(taken)
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
        match &self.pending {
            Some(pending) => {
                record(pending, &item, opts.after, trigger);
                self.inner.add_with_opts(opts, item)
            }
            None => self.inner.add_triggered(opts, item, trigger),
        }
    }
    fn add_triggered_ref(&self, opts: AddOpts, item: T, trigger: &Trigger) {
        match &self.pending {
            Some(_) => self.add_triggered(opts, item, trigger.clone()),
            None => self.inner.add_triggered_ref(opts, item, trigger),
        }
    }
    fn records_triggers(&self) -> bool {
        true
    }
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        match &self.pending {
            Some(pending) => take(pending, item, self.inner.is_priority()),
            None => self.inner.take_triggers(item),
        }
    }
    fn get_triggered_boxed(&self) -> BoxFuture<'_, Option<(T, i32, Option<Triggers>)>> {
        match &self.pending {
            Some(pending) => Box::pin(async move {
                let (item, priority) = self.inner.get_boxed().await?;
                let triggers = take(pending, &item, self.inner.is_priority());
                Some((item, priority, triggers))
            }),
            None => self.inner.get_triggered_boxed(),
        }
    }
    fn keeping_triggers(&self) -> Option<Arc<dyn Queue<T>>> {
        self.pending.is_none().then(|| Arc::clone(&self.inner))
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
        self.q().add_triggered_ref(opts, item, &self.trigger)
    }
    fn add_triggered(&self, opts: AddOpts, item: T, trigger: Trigger) {
        self.q().add_triggered(opts, item, trigger)
    }
    fn add_triggered_ref(&self, opts: AddOpts, item: T, trigger: &Trigger) {
        self.q().add_triggered_ref(opts, item, trigger)
    }
    fn records_triggers(&self) -> bool {
        self.q().records_triggers()
    }
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        self.q().take_triggers(item)
    }
    fn get_triggered_boxed(&self) -> BoxFuture<'_, Option<(T, i32, Option<Triggers>)>> {
        self.q().get_triggered_boxed()
    }
    super::forward_queue!(T, |q| q.q());
}
