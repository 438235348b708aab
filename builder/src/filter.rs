//! Event filters for every type a controller watches: what
//! [`ControllerBuilder::with_event_filter`](crate::ControllerBuilder::with_event_filter)
//! takes (controller-runtime's global predicates).
//!
//! A `ctrl_runtime::predicate::Predicate<K>` is typed: it sees `Arc<K>`. The builder's
//! global filters apply to the `For`, `Owns` and `Watches` types alike, so they see
//! each object as a [`ObjectView`] — its metadata, its type, and `as_any` to
//! downcast — the way Go's predicates see a `client.Object`. No object is copied: the
//! view borrows the cached `Arc<K>`. The "changed" predicates of
//! `ctrl_runtime::predicate` are filters too, and any
//! `Fn(&FilterEvent<'_>) -> bool` closure is one.

use std::any::Any;
use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use ctrl_runtime::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use ctrl_runtime::predicate::{
    AnnotationChanged, GenerationChanged, LabelChanged, MetadataChanged, Predicate,
    ResourceVersionChanged,
};
use kube::Resource;
use kube::api::ObjectMeta;
use kube::core::ApiResource;

/// An object of any watched type, as a global filter sees it (Go's `client.Object`).
pub trait ObjectView: Send + Sync + 'static {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's API group (empty for the core group).
    fn api_group(&self) -> Cow<'_, str>;
    /// The object's kind.
    fn api_kind(&self) -> Cow<'_, str>;
    /// The object itself, to downcast to its Rust type.
    fn as_any(&self) -> &dyn Any;
}

impl<K> ObjectView for K
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    fn metadata(&self) -> &ObjectMeta {
        Resource::meta(self)
    }
    fn api_group(&self) -> Cow<'_, str> {
        K::group(&())
    }
    fn api_kind(&self) -> Cow<'_, str> {
        K::kind(&())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One event, with its object(s) seen through [`ObjectView`].
#[derive(Clone, Copy)]
pub enum FilterEvent<'a> {
    /// An object was created (or listed at start, when `is_in_initial_list`).
    Create {
        /// The object.
        object: &'a dyn ObjectView,
        /// Whether it came from the informer's initial list.
        is_in_initial_list: bool,
    },
    /// An object was updated (or resynced).
    Update {
        /// Before.
        old: &'a dyn ObjectView,
        /// After.
        new: &'a dyn ObjectView,
    },
    /// An object was deleted.
    Delete {
        /// Its last known state.
        object: &'a dyn ObjectView,
        /// Whether the watch missed the delete.
        delete_state_unknown: bool,
    },
    /// A generic event (channels, timers).
    Generic {
        /// The object.
        object: &'a dyn ObjectView,
    },
}

impl<'a> FilterEvent<'a> {
    /// The object the event is about (for updates, the new one).
    pub fn object(&self) -> &'a dyn ObjectView {
        match *self {
            FilterEvent::Create { object, .. }
            | FilterEvent::Delete { object, .. }
            | FilterEvent::Generic { object } => object,
            FilterEvent::Update { new, .. } => new,
        }
    }
}

/// Decides whether an event of any watched type reaches its handler; `false` drops it.
pub trait EventFilter: Send + Sync + 'static {
    /// Whether `event` passes.
    fn filter(&self, event: &FilterEvent<'_>) -> bool;
}

impl<F> EventFilter for F
where
    F: Fn(&FilterEvent<'_>) -> bool + Send + Sync + 'static,
{
    fn filter(&self, event: &FilterEvent<'_>) -> bool {
        self(event)
    }
}

/// Updates pass when `changed(old, new)`; every other event passes.
fn on_update(event: &FilterEvent<'_>, changed: impl Fn(&ObjectMeta, &ObjectMeta) -> bool) -> bool {
    match event {
        FilterEvent::Update { old, new } => changed(old.metadata(), new.metadata()),
        _ => true,
    }
}

/// [`EventFilter`] for each "changed" predicate of `ctrl_runtime::predicate`: what it
/// compares is its [`MetadataChanged::changed`], written once there.
macro_rules! update_filters {
    ($($p:ty),*) => {$(
        impl EventFilter for $p {
            fn filter(&self, event: &FilterEvent<'_>) -> bool {
                on_update(event, |o, n| self.changed(o, n))
            }
        }
    )*};
}

update_filters!(
    GenerationChanged,
    ResourceVersionChanged,
    LabelChanged,
    AnnotationChanged
);

/// A filter that judges every event by its object alone; updates by the new object
/// (controller-runtime's `predicate.NewPredicateFuncs`, for any type).
pub fn object_filter(
    f: impl Fn(&dyn ObjectView) -> bool + Send + Sync + 'static,
) -> impl EventFilter {
    move |e: &FilterEvent<'_>| f(e.object())
}

/// The global filters as a [`Predicate<K>`] for one watched type: every filter must
/// pass.
pub(crate) struct Global<K> {
    filters: Arc<[Arc<dyn EventFilter>]>,
    _k: PhantomData<fn(K)>,
}

impl<K> Global<K> {
    pub(crate) fn new(filters: Arc<[Arc<dyn EventFilter>]>) -> Self {
        Self {
            filters,
            _k: PhantomData,
        }
    }

    fn all(&self, e: FilterEvent<'_>) -> bool {
        self.filters.iter().all(|f| f.filter(&e))
    }
}

impl<K: ObjectView> Predicate<K> for Global<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.all(FilterEvent::Create {
            object: &*e.object,
            is_in_initial_list: e.is_in_initial_list,
        })
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.all(FilterEvent::Update {
            old: &*e.object_old,
            new: &*e.object_new,
        })
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.all(FilterEvent::Delete {
            object: &*e.object,
            delete_state_unknown: e.delete_state_unknown,
        })
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.all(FilterEvent::Generic { object: &*e.object })
    }
}

/// A watched object of a dynamic type (`DynamicObject`, or `PartialObjectMeta` of
/// it) with its `ApiResource`, as a global filter sees it: `as_any` downcasts to the
/// object itself.
struct DynamicView<K> {
    object: Arc<K>,
    resource: Arc<ApiResource>,
}

impl<K: Resource + Send + Sync + 'static> ObjectView for DynamicView<K> {
    fn metadata(&self) -> &ObjectMeta {
        Resource::meta(&*self.object)
    }
    fn api_group(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.resource.group)
    }
    fn api_kind(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.resource.kind)
    }
    fn as_any(&self) -> &dyn Any {
        &*self.object
    }
}

/// The global filters as a [`Predicate<K>`] for a dynamic type, whose objects are
/// seen through a [`DynamicView`] (an `ApiResource` is not part of the object).
pub(crate) struct DynamicGlobal<K> {
    filters: Arc<[Arc<dyn EventFilter>]>,
    resource: Arc<ApiResource>,
    _k: PhantomData<fn(K)>,
}

impl<K: Resource + Send + Sync + 'static> DynamicGlobal<K> {
    pub(crate) fn new(filters: Arc<[Arc<dyn EventFilter>]>, resource: &ApiResource) -> Self {
        Self {
            filters,
            resource: Arc::new(resource.clone()),
            _k: PhantomData,
        }
    }

    fn view(&self, object: &Arc<K>) -> DynamicView<K> {
        DynamicView {
            object: object.clone(),
            resource: self.resource.clone(),
        }
    }

    fn all(&self, e: FilterEvent<'_>) -> bool {
        self.filters.iter().all(|f| f.filter(&e))
    }
}

impl<K: Resource + Send + Sync + 'static> Predicate<K> for DynamicGlobal<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        let object = self.view(&e.object);
        self.all(FilterEvent::Create {
            object: &object,
            is_in_initial_list: e.is_in_initial_list,
        })
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        let (old, new) = (self.view(&e.object_old), self.view(&e.object_new));
        self.all(FilterEvent::Update {
            old: &old,
            new: &new,
        })
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        let object = self.view(&e.object);
        self.all(FilterEvent::Delete {
            object: &object,
            delete_state_unknown: e.delete_state_unknown,
        })
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        let object = self.view(&e.object);
        self.all(FilterEvent::Generic { object: &object })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(generation: i64, label: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.generation = Some(generation);
        c.metadata.labels = Some([("l".to_string(), label.to_string())].into());
        Arc::new(c)
    }

    #[test]
    fn global_filters_see_every_type_through_the_view() {
        let filters: Arc<[Arc<dyn EventFilter>]> = Arc::from(vec![
            Arc::new(GenerationChanged) as Arc<dyn EventFilter>,
            Arc::new(object_filter(|o| {
                o.api_kind() == "ConfigMap" && o.as_any().downcast_ref::<ConfigMap>().is_some()
            })),
        ]);
        let g = Global::<ConfigMap>::new(filters);
        assert!(!g.update(&UpdateEvent::new(cm(1, "a"), cm(1, "b"))));
        assert!(g.update(&UpdateEvent::new(cm(1, "a"), cm(2, "a"))));
        assert!(g.create(&CreateEvent::new(cm(1, "a"))));
        let labels = Global::<ConfigMap>::new(Arc::from(vec![
            Arc::new(LabelChanged) as Arc<dyn EventFilter>
        ]));
        assert!(labels.update(&UpdateEvent::new(cm(1, "a"), cm(1, "b"))));
        assert!(!labels.update(&UpdateEvent::new(cm(1, "a"), cm(2, "a"))));
        let none = Global::<ConfigMap>::new(Arc::from(Vec::new()));
        assert!(none.delete(&DeleteEvent::new(cm(1, "a"))));
    }

    #[test]
    fn dynamic_objects_are_seen_with_their_api_resource() {
        use kube::core::{DynamicObject, GroupVersionKind};
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("x.io", "v1", "Gizmo"));
        let filters: Arc<[Arc<dyn EventFilter>]> = Arc::from(vec![
            Arc::new(GenerationChanged) as Arc<dyn EventFilter>,
            Arc::new(object_filter(|o| {
                o.api_group() == "x.io"
                    && o.api_kind() == "Gizmo"
                    && o.as_any().downcast_ref::<DynamicObject>().is_some()
            })),
        ]);
        let g = DynamicGlobal::<DynamicObject>::new(filters, &ar);
        let obj = |generation| {
            let mut o = DynamicObject::new("g", &ar);
            o.metadata.generation = Some(generation);
            Arc::new(o)
        };
        assert!(g.create(&CreateEvent::new(obj(1))));
        assert!(!g.update(&UpdateEvent::new(obj(1), obj(1))));
        assert!(g.update(&UpdateEvent::new(obj(1), obj(2))));
    }
}
