//! The "something changed" predicates: they drop updates that do not change what they
//! look at, and pass creates, deletes and generic events.

use kube::Resource;
use kube::api::ObjectMeta;

use super::Predicate;
use crate::event::UpdateEvent;

/// Passes updates that change `metadata.resourceVersion`: drops resyncs
/// (controller-runtime's `ResourceVersionChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceVersionChanged;

/// Passes updates that change `metadata.generation`: drops status and metadata-only
/// updates (controller-runtime's `GenerationChangedPredicate`). Objects without a
/// generation (most built-ins without a spec, e.g. ConfigMap) never pass an update.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationChanged;

/// Passes updates that change `metadata.labels` (controller-runtime's `LabelChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelChanged;

/// Passes updates that change `metadata.annotations`
/// (controller-runtime's `AnnotationChangedPredicate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationChanged;

/// What a "changed" predicate compares: the metadata of an update's old and new object.
/// The one place each predicate's field is named; its [`Predicate`] impl here and its
/// event filter in ctrl-builder (`with_event_filter`, any watched type) both ask it.
pub trait MetadataChanged {
    /// Whether `new` differs from `old` in what this predicate looks at.
    fn changed(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool;
}

impl MetadataChanged for ResourceVersionChanged {
    fn changed(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.resource_version != new.resource_version
    }
}

impl MetadataChanged for GenerationChanged {
    fn changed(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.generation != new.generation
    }
}

impl MetadataChanged for LabelChanged {
    fn changed(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.labels != new.labels
    }
}

impl MetadataChanged for AnnotationChanged {
    fn changed(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.annotations != new.annotations
    }
}

/// `Predicate<K>` for each "changed" predicate: an update passes when
/// [`MetadataChanged::changed`]; creates, deletes and generic events pass.
macro_rules! update_predicates {
    ($($p:ty),*) => {$(
        impl<K: Resource + 'static> Predicate<K> for $p {
            fn update(&self, e: &UpdateEvent<K>) -> bool {
                self.changed(e.object_old.meta(), e.object_new.meta())
            }
        }
    )*};
}

update_predicates!(
    ResourceVersionChanged,
    GenerationChanged,
    LabelChanged,
    AnnotationChanged
);
