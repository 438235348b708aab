//! What a source tells the queue about each event it delivers: a [`Trigger`] naming the
//! handler's origin, the event and the object (kind, resourceVersion, stored trace context,
//! and the namespace and name of any object but the reconciled one), stamped on the
//! handler's adds through [`Stamped`]. Built only when the controller's queue keeps triggers
//! ([`Queue::records_triggers`]).

use kube::Resource;

use crate::reconcile::TypedRequest;
use crate::workqueue::triggers::{Event, Kind, ObjectRef, Origin, traceparent_from_annotations};
use crate::workqueue::{Queue, Stamped, Trigger};

/// The trigger's view of `obj`, of kind `kind`, as `origin` queued it: a `For` handler
/// queues the object itself, whose name the request carries, so only its resourceVersion
/// is kept; any other handler queues another object, whose namespace and name are kept.
fn object_ref<K: Resource>(origin: Origin, kind: Kind, obj: &K) -> ObjectRef {
    let m = obj.meta();
    let rv = m.resource_version.as_deref().unwrap_or_default();
    let object = match origin {
        Origin::For => ObjectRef::reconciled(kind, rv),
        _ => {
            let ns = m.namespace.as_deref().unwrap_or_default();
            ObjectRef::named(kind, ns, m.name.as_deref().unwrap_or_default(), rv)
        }
    };
    let annotations = m.annotations.as_ref();
    object.with_traceparent(annotations.and_then(traceparent_from_annotations))
}

/// One event as a trigger: where from, what happened, about which object.
pub(super) struct EventInfo<'a, K> {
    pub(super) origin: Origin,
    pub(super) event: Event,
    pub(super) initial_list: bool,
    pub(super) kind: Kind,
    pub(super) object: &'a K,
}

/// Runs `f` with `queue`, or with a view of it that stamps `info`'s trigger on every add
/// when the queue keeps triggers.
pub(super) fn with_trigger<K: Resource, R: TypedRequest>(
    queue: &(dyn Queue<R> + 'static),
    info: EventInfo<'_, K>,
    f: impl FnOnce(&dyn Queue<R>),
) {
    if !queue.records_triggers() {
        return f(queue);
    }
    let trigger = Trigger::new(info.origin, info.event)
        .in_initial_list(info.initial_list)
        .with_object(object_ref(info.origin, info.kind, info.object));
    f(&Stamped::new(queue, trigger))
}
