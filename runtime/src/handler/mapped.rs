//! [`EnqueueRequestsFromMapFunc`]: reconcile whatever a function maps the object to.

use std::sync::Arc;

use kube::Resource;

use super::priority::{on_create, on_update};
use super::{EventHandler, add_unique};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::Request;
use crate::workqueue::Queue;

type MapFn<K> = Box<dyn Fn(&Arc<K>) -> Vec<Request> + Send + Sync>;

/// Enqueues the requests a function returns for the event's object; for updates, for
/// both the old and the new object, each distinct request once
/// (controller-runtime's `handler.EnqueueRequestsFromMapFunc`).
pub struct EnqueueRequestsFromMapFunc<K> {
    map: MapFn<K>,
}

impl<K> EnqueueRequestsFromMapFunc<K> {
    /// A handler that enqueues `map(object)`.
    pub fn new(map: impl Fn(&Arc<K>) -> Vec<Request> + Send + Sync + 'static) -> Self {
        Self { map: Box::new(map) }
    }
}

impl<K: Resource + 'static> EventHandler<K> for EnqueueRequestsFromMapFunc<K> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<Request>) {
        on_create(e, q, |q| add_unique(q, (self.map)(&e.object)))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<Request>) {
        on_update(e, q, |q| {
            let mut reqs = (self.map)(&e.object_old);
            reqs.extend((self.map)(&e.object_new));
            add_unique(q, reqs)
        })
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<Request>) {
        add_unique(q, (self.map)(&e.object))
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<Request>) {
        add_unique(q, (self.map)(&e.object))
    }
}
