//! [`EnqueueRequestsFromMapFunc`]: reconcile whatever a function maps the object to.

use std::sync::Arc;

use kube::Resource;

use super::priority::{on_create, on_update};
use super::{EventHandler, add_unique};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;
use crate::workqueue::triggers::Origin;

type MapFn<K, R> = Box<dyn Fn(&Arc<K>) -> Vec<R> + Send + Sync>;

/// Enqueues the requests a function returns for the event's object; for updates, for
/// both the old and the new object, each distinct request once
/// (controller-runtime's `handler.EnqueueRequestsFromMapFunc`). The function may
/// return requests of any [`TypedRequest`] type `R`, which is how objects feed a typed
/// controller (Go's `TypedEnqueueRequestsFromMapFunc`).
pub struct EnqueueRequestsFromMapFunc<K, R: TypedRequest = Request> {
    map: MapFn<K, R>,
}

impl<K, R: TypedRequest> EnqueueRequestsFromMapFunc<K, R> {
    /// A handler that enqueues `map(object)`.
    pub fn new(map: impl Fn(&Arc<K>) -> Vec<R> + Send + Sync + 'static) -> Self {
        Self { map: Box::new(map) }
    }
}

impl<K: Resource + 'static, R: TypedRequest> EventHandler<K, R>
    for EnqueueRequestsFromMapFunc<K, R>
{
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<R>) {
        on_create(e, q, |q| add_unique(q, (self.map)(&e.object)))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<R>) {
        on_update(e, q, |q| {
            let mut reqs = (self.map)(&e.object_old);
            reqs.extend((self.map)(&e.object_new));
            add_unique(q, reqs)
        })
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<R>) {
        add_unique(q, (self.map)(&e.object))
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<R>) {
        add_unique(q, (self.map)(&e.object))
    }
    fn trigger_origin(&self) -> Origin {
        Origin::MapFunc
    }
}
