//! [`EnqueueRequestForObject`]: reconcile the object the event is about.

use kube::Resource;

use super::EventHandler;
use super::priority::{on_create, on_update};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::Request;
use crate::workqueue::Queue;
use crate::workqueue::triggers::Origin;

/// Enqueues the namespace/name of the event's object; for updates, of the new object
/// (controller-runtime's `handler.EnqueueRequestForObject`). This is what `For` uses.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueRequestForObject;

impl<K: Resource + 'static> EventHandler<K> for EnqueueRequestForObject {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<Request>) {
        on_create(e, q, |q| q.add(Request::from_obj(&*e.object)))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<Request>) {
        on_update(e, q, |q| q.add(Request::from_obj(&*e.object_new)))
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object))
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object))
    }
    fn trigger_origin(&self) -> Origin {
        Origin::For
    }
}
