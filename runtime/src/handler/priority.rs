//! controller-runtime's low-priority rule (`handler.WithLowPriorityWhenUnchanged`):
//! on a priority queue, creates from the initial list and updates that keep the
//! resourceVersion are added at [`LOW_PRIORITY`]. On other queues nothing changes.

use std::time::Duration;

use kube::Resource;

use super::EventHandler;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::TypedRequest;
use crate::workqueue::triggers::Origin;
use crate::workqueue::{AddOpts, LOW_PRIORITY, Queue, Trigger, Triggers};

/// A queue view whose adds carry a default priority (Go's `workqueueWithDefaultPriority`).
struct DefaultPriority<'a, R: TypedRequest> {
    inner: &'a dyn Queue<R>,
    priority: Option<i32>,
}

impl<R: TypedRequest> Queue<R> for DefaultPriority<'_, R> {
    fn add(&self, item: R) {
        self.add_with_opts(AddOpts::default(), item)
    }
    fn add_after(&self, item: R, delay: Duration) {
        let opts = AddOpts {
            after: Some(delay),
            ..AddOpts::default()
        };
        self.add_with_opts(opts, item)
    }
    fn add_rate_limited(&self, item: R) {
        let opts = AddOpts {
            rate_limited: true,
            ..AddOpts::default()
        };
        self.add_with_opts(opts, item)
    }
    fn add_with_opts(&self, mut opts: AddOpts, item: R) {
        if opts.priority.is_none() {
            opts.priority = self.priority;
        }
        self.inner.add_with_opts(opts, item)
    }
    fn add_triggered(&self, mut opts: AddOpts, item: R, trigger: Trigger) {
        if opts.priority.is_none() {
            opts.priority = self.priority;
        }
        self.inner.add_triggered(opts, item, trigger)
    }
    fn add_triggered_ref(&self, mut opts: AddOpts, item: R, trigger: &Trigger) {
        if opts.priority.is_none() {
            opts.priority = self.priority;
        }
        self.inner.add_triggered_ref(opts, item, trigger)
    }
    fn records_triggers(&self) -> bool {
        self.inner.records_triggers()
    }
    fn take_triggers(&self, item: &R) -> Option<Triggers> {
        self.inner.take_triggers(item)
    }
    crate::workqueue::forward_queue!(R, |q| q.inner);
}

/// Runs `f` with a queue that adds at low priority if `e` comes from the initial list.
pub(crate) fn on_create<K, R: TypedRequest>(
    e: &CreateEvent<K>,
    q: &dyn Queue<R>,
    f: impl FnOnce(&dyn Queue<R>),
) {
    if !q.is_priority() {
        return f(q);
    }
    let priority = e.is_in_initial_list.then_some(LOW_PRIORITY);
    f(&DefaultPriority { inner: q, priority })
}

/// Runs `f` with a queue that adds at low priority if `e` keeps the resourceVersion.
pub(crate) fn on_update<K: Resource, R: TypedRequest>(
    e: &UpdateEvent<K>,
    q: &dyn Queue<R>,
    f: impl FnOnce(&dyn Queue<R>),
) {
    if !q.is_priority() {
        return f(q);
    }
    let unchanged = e.object_old.meta().resource_version == e.object_new.meta().resource_version;
    let priority = unchanged.then_some(LOW_PRIORITY);
    f(&DefaultPriority { inner: q, priority })
}

/// Wraps a handler in the low-priority rule; see [`with_low_priority_when_unchanged`].
pub struct WithLowPriorityWhenUnchanged<H>(H);

/// Lowers the priority of initial-list creates and resync updates that `handler`
/// enqueues, when the queue is a priority queue (controller-runtime's
/// `handler.WithLowPriorityWhenUnchanged`). The stock handlers already do this.
pub fn with_low_priority_when_unchanged<H>(handler: H) -> WithLowPriorityWhenUnchanged<H> {
    WithLowPriorityWhenUnchanged(handler)
}

impl<K: Resource + 'static, R: TypedRequest, H: EventHandler<K, R>> EventHandler<K, R>
    for WithLowPriorityWhenUnchanged<H>
{
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<R>) {
        on_create(e, q, |q| self.0.create(e, q))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<R>) {
        on_update(e, q, |q| self.0.update(e, q))
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<R>) {
        self.0.delete(e, q)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<R>) {
        self.0.generic(e, q)
    }
    fn trigger_origin(&self) -> Origin {
        self.0.trigger_origin()
    }
}
