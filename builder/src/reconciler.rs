//! What [`ControllerBuilder::build`](crate::ControllerBuilder::build) and `complete`
//! accept: a [`Reconciler`] of [`Request`](ctrl_runtime::reconcile::Request)s, or an
//! [`ObjectReconciler<K>`] that receives the cached `Arc<K>` (controller-runtime's
//! `reconcile.AsReconciler`: the object is read from the manager's cache and a
//! request for an object that is gone is skipped).
//!
//! [`IntoReconciler`] tells the two apart by a marker type ([`ByRequest`],
//! [`ByObject`]) that the compiler infers, so both are passed the same way.

use std::any::TypeId;
use std::marker::PhantomData;
use std::sync::Arc;

use ctrl_runtime::cache::{Cache, CacheObject};
use ctrl_runtime::reconcile::{ObjectReconciler, Reconciler, as_reconciler};

/// Marker: the reconciler takes requests.
pub struct ByRequest;

/// Marker: the reconciler takes `Arc<K>` objects from the cache.
pub struct ByObject<K>(PhantomData<fn(K)>);

/// A reconciler the builder can run; see the module docs.
pub trait IntoReconciler<M>: Send + 'static {
    /// The reconciled object type, for object reconcilers: its `TypeId` and name.
    fn object_type() -> Option<(TypeId, &'static str)>;
    /// The request reconciler, reading objects from `cache` if it needs them.
    fn into_reconciler(self, cache: &Cache) -> Arc<dyn Reconciler>;
}

impl<R: Reconciler> IntoReconciler<ByRequest> for R {
    fn object_type() -> Option<(TypeId, &'static str)> {
        None
    }
    fn into_reconciler(self, _cache: &Cache) -> Arc<dyn Reconciler> {
        Arc::new(self)
    }
}

impl<K, R> IntoReconciler<ByObject<K>> for R
where
    K: CacheObject<DynamicType = ()>,
    R: ObjectReconciler<K>,
{
    fn object_type() -> Option<(TypeId, &'static str)> {
        Some((TypeId::of::<K>(), std::any::type_name::<K>()))
    }
    fn into_reconciler(self, cache: &Cache) -> Arc<dyn Reconciler> {
        Arc::new(as_reconciler::<K, _, _>(cache.clone(), self))
    }
}
