//! Events: what happened to an object, as informers and sources report it
//! (controller-runtime's `pkg/event`).
//!
//! A leaf of the controller's data flow: predicates filter events and event handlers
//! turn them into reconcile requests, both above this module. Objects are shared `Arc<K>`: an event is cheap to
//! clone and never deep-copies the object.

use std::sync::Arc;

/// An object was created (or seen in the informer's initial list).
#[derive(Debug)]
pub struct CreateEvent<K> {
    /// The object.
    pub object: Arc<K>,
    /// True when the object comes from the informer's initial list rather than a watch
    /// event; handlers enqueue such objects at low priority.
    pub is_in_initial_list: bool,
}

/// An object was updated (or resynced: then both versions share a resourceVersion).
#[derive(Debug)]
pub struct UpdateEvent<K> {
    /// The object before the update.
    pub object_old: Arc<K>,
    /// The object after the update.
    pub object_new: Arc<K>,
}

/// An object was deleted.
#[derive(Debug)]
pub struct DeleteEvent<K> {
    /// The last known state of the object.
    pub object: Arc<K>,
    /// True when the watch missed the delete and the object's final state is unknown
    /// (client-go's `DeletedFinalStateUnknown`).
    pub delete_state_unknown: bool,
}

/// Something other than a create, update or delete happened to an object: an external
/// trigger, a timer, a webhook (what a `source::Channel` carries).
#[derive(Debug)]
pub struct GenericEvent<K> {
    /// The object.
    pub object: Arc<K>,
}

impl<K> CreateEvent<K> {
    /// A create event from a watch (not the initial list).
    pub fn new(object: Arc<K>) -> Self {
        Self {
            object,
            is_in_initial_list: false,
        }
    }
}

impl<K> UpdateEvent<K> {
    /// An update from `object_old` to `object_new`.
    pub fn new(object_old: Arc<K>, object_new: Arc<K>) -> Self {
        Self {
            object_old,
            object_new,
        }
    }
}

impl<K> DeleteEvent<K> {
    /// A delete event whose final state is known.
    pub fn new(object: Arc<K>) -> Self {
        Self {
            object,
            delete_state_unknown: false,
        }
    }
}

impl<K> GenericEvent<K> {
    /// A generic event for `object`.
    pub fn new(object: Arc<K>) -> Self {
        Self { object }
    }
}

// Manual Clone impls: cloning an event clones the Arcs, and must not require K: Clone.
impl<K> Clone for CreateEvent<K> {
    fn clone(&self) -> Self {
        Self {
            object: self.object.clone(),
            is_in_initial_list: self.is_in_initial_list,
        }
    }
}

impl<K> Clone for UpdateEvent<K> {
    fn clone(&self) -> Self {
        Self {
            object_old: self.object_old.clone(),
            object_new: self.object_new.clone(),
        }
    }
}

impl<K> Clone for DeleteEvent<K> {
    fn clone(&self) -> Self {
        Self {
            object: self.object.clone(),
            delete_state_unknown: self.delete_state_unknown,
        }
    }
}

impl<K> Clone for GenericEvent<K> {
    fn clone(&self) -> Self {
        Self {
            object: self.object.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NotClone;

    #[test]
    fn clone_shares_the_object() {
        let e = GenericEvent::new(Arc::new(NotClone));
        let c = e.clone();
        assert!(Arc::ptr_eq(&e.object, &c.object));
        let u = UpdateEvent::new(Arc::new(NotClone), Arc::new(NotClone));
        assert!(Arc::ptr_eq(&u.clone().object_new, &u.object_new));
        assert!(!CreateEvent::new(Arc::new(1)).is_in_initial_list);
        assert!(!DeleteEvent::new(Arc::new(1)).delete_state_unknown);
    }
}
