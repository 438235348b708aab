//! The "something changed" predicates: they drop updates that do not change what they
//! look at, and pass creates, deletes and generic events.

use kube::Resource;

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

impl<K: Resource + 'static> Predicate<K> for ResourceVersionChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().resource_version != e.object_new.meta().resource_version
    }
}

impl<K: Resource + 'static> Predicate<K> for GenerationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().generation != e.object_new.meta().generation
    }
}

impl<K: Resource + 'static> Predicate<K> for LabelChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().labels != e.object_new.meta().labels
    }
}

impl<K: Resource + 'static> Predicate<K> for AnnotationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().annotations != e.object_new.meta().annotations
    }
}
