//! [`Funcs`]: an event handler made of optional closures.

use kube::Resource;

use super::EventHandler;
use super::priority::{on_create, on_update};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;

type Handle<E, R> = Box<dyn Fn(&E, &dyn Queue<R>) + Send + Sync>;

/// An event handler from optional closures; an unset closure ignores its events
/// (controller-runtime's `handler.Funcs`; with a request type `R`, `TypedFuncs`). Like
/// Go's, the create and update closures get a queue that applies the low-priority rule
/// when the queue is a priority queue.
pub struct Funcs<K, R: TypedRequest = Request> {
    /// Called for create events.
    pub create_func: Option<Handle<CreateEvent<K>, R>>,
    /// Called for update events.
    pub update_func: Option<Handle<UpdateEvent<K>, R>>,
    /// Called for delete events.
    pub delete_func: Option<Handle<DeleteEvent<K>, R>>,
    /// Called for generic events.
    pub generic_func: Option<Handle<GenericEvent<K>, R>>,
}

impl<K, R: TypedRequest> Default for Funcs<K, R> {
    fn default() -> Self {
        Self {
            create_func: None,
            update_func: None,
            delete_func: None,
            generic_func: None,
        }
    }
}

impl<K, R: TypedRequest> Funcs<K, R> {
    /// Sets the create closure.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>, &dyn Queue<R>) + Send + Sync + 'static,
    ) -> Self {
        self.create_func = Some(Box::new(f));
        self
    }
    /// Sets the update closure.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>, &dyn Queue<R>) + Send + Sync + 'static,
    ) -> Self {
        self.update_func = Some(Box::new(f));
        self
    }
    /// Sets the delete closure.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>, &dyn Queue<R>) + Send + Sync + 'static,
    ) -> Self {
        self.delete_func = Some(Box::new(f));
        self
    }
    /// Sets the generic closure.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>, &dyn Queue<R>) + Send + Sync + 'static,
    ) -> Self {
        self.generic_func = Some(Box::new(f));
        self
    }
}

impl<K: Resource + 'static, R: TypedRequest> EventHandler<K, R> for Funcs<K, R> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<R>) {
        if let Some(f) = &self.create_func {
            on_create(e, q, |q| f(e, q))
        }
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<R>) {
        if let Some(f) = &self.update_func {
            on_update(e, q, |q| f(e, q))
        }
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<R>) {
        if let Some(f) = &self.delete_func {
            f(e, q)
        }
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<R>) {
        if let Some(f) = &self.generic_func {
            f(e, q)
        }
    }
}
