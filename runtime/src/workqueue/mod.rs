//! Work queues with client-go semantics: dedup, a processing set, delays, rate limiting,
//! priorities and metrics.
//!
//! Event handlers add keys through the object-safe [`Queue`] trait; controllers take
//! keys out with [`Queue::get_boxed`], reconcile
//! them, and report back with [`Queue::done`] / [`Queue::forget`] /
//! [`Queue::add_rate_limited`]. Concrete queues implement [`Queue`] and also offer
//! faster inherent methods for direct use. [`Triggered`] makes a queue keep, for each
//! queued key, what queued it ([`triggers`]): the priority queue in its own key slots,
//! other queues beside them.

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

mod core;
mod delaying;
mod fair;
mod metrics;
mod priority;
mod queue;
mod rate_limiter;
mod rate_limiting;
mod shared;
mod table;
mod triggered;
pub mod triggers;

pub use fair::FairnessFn;
pub use metrics::{
    BucketCounts, CounterMetric, DURATION_BUCKETS, GaugeMetric, HistogramMetric,
    MAX_RECOMMENDED_UNIQUE_PRIORITIES, MetricsProvider, PRIORITY_CARDINALITY_EXCEEDED,
    SettableGaugeMetric, prometheus_metrics_provider,
};
pub use priority::PriorityQueue;
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
pub use triggered::{Stamped, Triggered};
pub use triggers::{Trigger, Triggers};

/// Implements the [`Queue`] methods that take or report (everything but the adds and the
/// trigger methods) by forwarding to the queue `$inner` names, with `$q` bound to `self`:
/// what every queue view and decorator ([`Triggered`], [`Stamped`], the handlers'
/// default-priority view) writes the same way.
macro_rules! forward_queue {
    ($t:ty, |$q:ident| $inner:expr) => {
        fn get_boxed(&self) -> ::futures::future::BoxFuture<'_, Option<($t, i32)>> {
            let $q = self;
            $inner.get_boxed()
        }
        fn done(&self, item: &$t) {
            let $q = self;
            $inner.done(item)
        }
        fn forget(&self, item: &$t) {
            let $q = self;
            $inner.forget(item)
        }
        fn num_requeues(&self, item: &$t) -> usize {
            let $q = self;
            $inner.num_requeues(item)
        }
        fn len(&self) -> usize {
            let $q = self;
            $inner.len()
        }
        fn shut_down(&self) {
            let $q = self;
            $inner.shut_down()
        }
        fn shut_down_with_drain(&self) -> ::futures::future::BoxFuture<'_, ()> {
            let $q = self;
            $inner.shut_down_with_drain()
        }
        fn shutting_down(&self) -> bool {
            let $q = self;
            $inner.shutting_down()
        }
        fn is_priority(&self) -> bool {
            let $q = self;
            $inner.is_priority()
        }
    };
}
pub(crate) use forward_queue;

/// How to build a queue (client-go's `RateLimitingQueueConfig`, controller-runtime's
/// priority queue `Opts`).
pub struct QueueConfig<T> {
    /// The queue's name: the `name` and `controller` label of its metrics. An empty name
    /// turns metrics off, as in client-go.
    pub name: String,
    /// The limiter behind `add_rate_limited`; `None` takes the queue's default
    /// ([`default_controller_rate_limiter`] for [`RateLimitingQueue`],
    /// [`default_item_rate_limiter`] for [`PriorityQueue`]).
    pub rate_limiter: Option<Arc<dyn RateLimiter<T>>>,
    /// Where metrics go; `None` means no metrics (and no cost). Controllers pass
    /// [`prometheus_metrics_provider`].
    pub metrics: Option<Arc<dyn MetricsProvider>>,
}

impl<T> Default for QueueConfig<T> {
    fn default() -> Self {
        Self {
            name: String::new(),
            rate_limiter: None,
            metrics: None,
        }
    }
}

impl<T> QueueConfig<T> {
    /// A config with this name and the defaults otherwise.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the rate limiter.
    pub fn with_rate_limiter(mut self, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }

    /// Sets the metrics provider.
    pub fn with_metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }
}

/// The bounds every queue key meets (`reconcile::Request` in controllers).
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueKey for T {}

/// Options for [`Queue::add_with_opts`], as controller-runtime's priority queue `AddOpts`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddOpts {
    /// Make the item ready only after this delay.
    pub after: Option<Duration>,
    /// Ask the queue's rate limiter for the delay (ignored when `after` is set).
    pub rate_limited: bool,
    /// The item's priority: higher is handed out first; `None` means 0.
    pub priority: Option<i32>,
}

/// The priority controller-runtime gives to events that are not new news: creates from
/// the initial list and resync updates.
pub const LOW_PRIORITY: i32 = -100;

/// Decides how long an item waits before it is retried (client-go's `TypedRateLimiter`).
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now; each call counts as one more failure.
    fn when(&self, item: &T) -> Duration;
    /// Stop tracking `item`: its failures are forgotten.
    fn forget(&self, item: &T);
    /// How many times `item` has failed (been asked `when`) since it was last forgotten.
    fn num_requeues(&self, item: &T) -> usize;
}

/// The object-safe face of every ctrl work queue, used by handlers and controllers.
///
/// Semantics are client-go's: an item is held at most once (dirty set); an item being
/// processed is not handed out again until [`Queue::done`], and if it was re-added
/// meanwhile it is queued again at `done`.
pub trait Queue<T: QueueKey>: Send + Sync {
    /// Adds `item` now (no-op if already queued, deferred if being processed).
    fn add(&self, item: T);
    /// Adds `item` once `delay` has passed; zero delay adds at once.
    fn add_after(&self, item: T, delay: Duration);
    /// Adds `item` after the delay the rate limiter gives it.
    fn add_rate_limited(&self, item: T);
    /// Adds `item` with options. Queues without priorities ignore `priority`.
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        match (opts.after, opts.rate_limited) {
            (Some(d), _) => self.add_after(item, d),
            (None, true) => self.add_rate_limited(item),
            (None, false) => self.add(item),
        }
    }
    /// Waits for the next item; `None` once shut down (and drained). The `i32` is the
    /// item's priority (0 on queues without priorities).
    fn get_boxed(&self) -> BoxFuture<'_, Option<(T, i32)>>;
    /// Marks `item` as no longer being processed.
    fn done(&self, item: &T);
    /// Clears the rate limiter's memory of `item`.
    fn forget(&self, item: &T);
    /// How many times `item` was rate-limited since it was last forgotten.
    fn num_requeues(&self, item: &T) -> usize;
    /// Number of items ready to be handed out (not counting delayed or in-flight ones).
    fn len(&self) -> usize;
    /// Whether [`Queue::len`] is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Stops the queue: adds are ignored, `get` returns what is queued then `None`.
    fn shut_down(&self);
    /// Like [`Queue::shut_down`] but resolves only once every in-flight item is done.
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()>;
    /// Whether the queue is shutting down.
    fn shutting_down(&self) -> bool;
    /// Whether the queue honours priorities (handlers use low priority only then).
    fn is_priority(&self) -> bool {
        false
    }
    /// [`Queue::add_with_opts`], recording `trigger` as one cause of `item` when the queue
    /// keeps triggers ([`Triggered`]); other queues drop it.
    fn add_triggered(&self, opts: AddOpts, item: T, trigger: Trigger) {
        let _ = trigger;
        self.add_with_opts(opts, item)
    }
    /// [`Queue::add_triggered`] with a borrowed trigger (what a source's one trigger for
    /// one event passes to each add): a queue that keeps triggers in its key slots clones it
    /// only when the key's set stores it or takes its newer object, so a dedup hit touches
    /// no reference count. By default: cloned, then [`Queue::add_triggered`].
    fn add_triggered_ref(&self, opts: AddOpts, item: T, trigger: &Trigger) {
        self.add_triggered(opts, item, trigger.clone())
    }
    /// Whether the queue keeps triggers: sources build a [`Trigger`] only then.
    fn records_triggers(&self) -> bool {
        false
    }
    /// The triggers recorded for `item` since it was last taken, taken out of the queue;
    /// `None` from a queue that keeps none. The controller calls it after `get`.
    fn take_triggers(&self, item: &T) -> Option<Triggers> {
        let _ = item;
        None
    }
    /// [`Queue::get_boxed`] and [`Queue::take_triggers`] of the key it yields in one call
    /// (what a controller's worker makes): a queue that keeps triggers in its key slots
    /// takes the set under the lock that hands the key out.
    fn get_triggered_boxed(&self) -> BoxFuture<'_, Option<(T, i32, Option<Triggers>)>> {
        Box::pin(async move {
            let (item, priority) = self.get_boxed().await?;
            let triggers = self.take_triggers(&item);
            Some((item, priority, triggers))
        })
    }
    /// A handle to this same queue that keeps triggers itself, in each key's own state
    /// (the priority queue: one lookup under one lock serves the add and its trigger), if
    /// the queue can; [`Triggered::new`] then uses it instead of keeping them beside.
    fn keeping_triggers(&self) -> Option<Arc<dyn Queue<T>>> {
        None
    }
}
