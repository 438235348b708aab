//! What [`ControllerBuilder::build`](crate::ControllerBuilder::build) and `complete`
//! accept: a [`Reconciler`] of [`Request`](ctrl_runtime::reconcile::Request)s, or an
//! [`ObjectReconciler<K>`] that receives the cached `Arc<K>` (controller-runtime's
//! `reconcile.AsReconciler`: the object is read from the manager's cache and a
//! request for an object that is gone is skipped).
//!
//! [`IntoReconciler`] tells the two apart by a marker type ([`ByRequest`],
//! [`ByObject`]) that the compiler infers, so both are passed the same way.
//! [`object_func`] makes an object reconciler from a closure.

use std::any::TypeId;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use ctrl_runtime::cache::{Cache, CacheObject};
use ctrl_runtime::reconcile::{self, Action, ObjectReconciler, Reconciler, as_reconciler};
use tokio_util::sync::CancellationToken;

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

/// An [`ObjectReconciler`] made from a closure, returned by [`object_func`].
pub struct ObjectFunc<K, F> {
    f: F,
    _k: PhantomData<fn(K)>,
}

/// Makes an object reconciler from an async closure over the cached `Arc<K>` (the
/// object counterpart of `reconcile::func`):
///
/// ```no_run
/// # async fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), ctrl_builder::Error> {
/// use std::sync::Arc;
/// use ctrl_builder::{ControllerBuilder, reconciler::object_func};
/// use ctrl_runtime::reconcile::Action;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// ControllerBuilder::new(&mgr)
///     .for_::<ConfigMap>()
///     .complete(object_func(|_ctx, cm: Arc<ConfigMap>| async move {
///         tracing::info!(name = ?cm.metadata.name, "reconciling");
///         Ok(Action::done())
///     }))
///     .await
/// # }
/// ```
pub fn object_func<K, F, Fut>(f: F) -> ObjectFunc<K, F>
where
    K: Send + Sync + 'static,
    F: Fn(CancellationToken, Arc<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, reconcile::Error>> + Send + 'static,
{
    ObjectFunc { f, _k: PhantomData }
}

#[async_trait]
impl<K, F, Fut> ObjectReconciler<K> for ObjectFunc<K, F>
where
    K: Send + Sync + 'static,
    F: Fn(CancellationToken, Arc<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, reconcile::Error>> + Send + 'static,
{
    async fn reconcile(
        &self,
        ctx: CancellationToken,
        obj: Arc<K>,
    ) -> Result<Action, reconcile::Error> {
        (self.f)(ctx, obj).await
    }
}
