//! What a source tells the queue about each event it delivers: a [`Trigger`] naming the
//! handler's origin, the event and the object (kind, namespace, name, resourceVersion,
//! stored trace context), stamped on the handler's adds through [`Stamped`]. Built only
//! when the controller's queue keeps triggers ([`Queue::records_triggers`]).

use std::sync::Arc;

use kube::Resource;

use crate::reconcile::TypedRequest;
use crate::workqueue::triggers::{Event, ObjectRef, Origin, traceparent_from_annotations};
use crate::workqueue::{Queue, Stamped, Trigger};

/// The trigger's view of `obj`, of kind `kind`.
pub(super) fn object_ref<K: Resource>(kind: &Arc<str>, obj: &K) -> ObjectRef {
    let m = obj.meta();
    ObjectRef {
        kind: kind.clone(),
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone().unwrap_or_default(),
        resource_version: m.resource_version.clone().unwrap_or_default(),
        traceparent: m
            .annotations
            .as_ref()
            .and_then(traceparent_from_annotations),
    }
}

/// The kind of `K` from its Rust type name (`k8s_openapi::…::ConfigMap` -> `ConfigMap`),
/// for sources that have no dynamic type to ask.
pub(super) fn kind_of_type<K>() -> Arc<str> {
    let full = std::any::type_name::<K>();
    let plain = full.split('<').next().unwrap_or(full);
    plain.rsplit("::").next().unwrap_or(plain).into()
}

/// One event as a trigger: where from, what happened, about which object.
pub(super) struct EventInfo<'a, K> {
    pub(super) origin: Origin,
    pub(super) event: Event,
    pub(super) initial_list: bool,
    pub(super) kind: &'a Arc<str>,
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
        .with_object(object_ref(info.kind, info.object));
    f(&Stamped::new(queue, trigger))
}

#[cfg(test)]
mod tests {
    #[test]
    fn kinds_come_from_type_names() {
        use k8s_openapi::api::core::v1::ConfigMap;
        assert_eq!(&*super::kind_of_type::<ConfigMap>(), "ConfigMap");
        assert_eq!(
            &*super::kind_of_type::<kube::core::PartialObjectMeta<ConfigMap>>(),
            "PartialObjectMeta"
        );
    }
}
