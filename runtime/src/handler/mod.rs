//! Event handlers: turn an event about one object into reconcile requests in a work
//! queue (controller-runtime's `pkg/handler`).
//!
//! Sources call a handler for each event ([`crate::event`]) that the
//! watch's predicates ([`crate::predicate`]) let through; the handler adds
//! [`Request`]s to the controller's queue
//! ([`crate::workqueue`]). The stock handlers:
//!
//! - [`EnqueueRequestForObject`]: reconcile the object itself (`For` in the builder);
//! - [`EnqueueRequestForOwner`]: reconcile the owner named in its owner references (`Owns`);
//! - [`EnqueueRequestsFromMapFunc`]: reconcile whatever a function maps the object to;
//! - [`Funcs`]: closures per event type.
//!
//! A handler may enqueue requests of any [`TypedRequest`] type `R` (Go's
//! `TypedEventHandler[object, request]`); [`Request`] is the default. For a typed
//! controller, [`EnqueueRequestsFromMapFunc`] and [`Funcs`] are typed (Go's
//! `TypedEnqueueRequestsFromMapFunc`, `TypedFuncs`); the two stock handlers that derive
//! namespace/name from the object enqueue [`Request`]s.
//!
//! All of them follow controller-runtime's priority rule on a priority queue: creates
//! from the informer's initial list and updates that keep the resourceVersion (resyncs)
//! are added at [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY), so fresh changes jump
//! ahead of a startup or resync flood ([`with_low_priority_when_unchanged`]).

mod enqueue;
mod funcs;
mod mapped;
mod owner;
mod priority;

use std::sync::Arc;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;
use crate::workqueue::triggers::Origin;

pub use enqueue::EnqueueRequestForObject;
pub use funcs::Funcs;
pub use mapped::EnqueueRequestsFromMapFunc;
pub use owner::EnqueueRequestForOwner;
pub use priority::{WithLowPriorityWhenUnchanged, with_low_priority_when_unchanged};

/// Maps events about objects of type `K` to reconcile requests of type `R` in `queue`
/// (controller-runtime's `handler.EventHandler`; `TypedEventHandler[K, R]`).
///
/// Handlers run on the event path, so they are synchronous and should be quick:
/// compute keys, add them, return.
pub trait EventHandler<K, R: TypedRequest = Request>: Send + Sync + 'static {
    /// Called for a create event.
    fn create(&self, event: &CreateEvent<K>, queue: &dyn Queue<R>);
    /// Called for an update event.
    fn update(&self, event: &UpdateEvent<K>, queue: &dyn Queue<R>);
    /// Called for a delete event.
    fn delete(&self, event: &DeleteEvent<K>, queue: &dyn Queue<R>);
    /// Called for a generic event.
    fn generic(&self, event: &GenericEvent<K>, queue: &dyn Queue<R>);
    /// What the triggers of this handler's adds name as their origin on a cache-backed
    /// source ([`crate::workqueue::triggers`]): `Watches` unless the handler says otherwise
    /// (the stock ones say `For`, `Owns`, `MapFunc`).
    fn trigger_origin(&self) -> Origin {
        Origin::Watches
    }
}

/// A shared event handler, as sources hold them.
pub type BoxHandler<K, R = Request> = Arc<dyn EventHandler<K, R>>;

impl<K: 'static, R: TypedRequest, H: EventHandler<K, R> + ?Sized> EventHandler<K, R> for Arc<H> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<R>) {
        (**self).create(e, q)
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<R>) {
        (**self).update(e, q)
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<R>) {
        (**self).delete(e, q)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<R>) {
        (**self).generic(e, q)
    }
    fn trigger_origin(&self) -> Origin {
        (**self).trigger_origin()
    }
}

/// Adds each request once, keeping first-seen order.
fn add_unique<R: TypedRequest>(queue: &dyn Queue<R>, reqs: impl IntoIterator<Item = R>) {
    let mut seen: Vec<R> = Vec::new();
    for r in reqs {
        if !seen.contains(&r) {
            queue.add(r.clone());
            seen.push(r);
        }
    }
}
