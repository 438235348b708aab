//! What [`ControllerBuilder::build`](crate::ControllerBuilder::build) and `complete`
//! accept: a [`Reconciler<I>`](Reconciler) whose input `I` is either the controller's
//! request type (`Request`, or a typed controller's own) or `Arc<K>` of the `For` type
//! `K` (controller-runtime's `reconcile.AsReconciler`: the object is read through the
//! manager's client, from its cache, and a request for an object that is gone is skipped;
//! with read-your-own-writes on, the read waits for the client's own writes of it).
//!
//! The choice is the reconciler's own type parameter, and [`ReconcilerInput`] says
//! which inputs a builder accepts: since the builder's type carries the `For` type
//! (`ControllerBuilder<R, F>`), an object reconciler of any other type is a compile
//! error, not a run-time one. [`object_func`] makes an object reconciler from a closure.

use std::future::Future;
use std::sync::Arc;

use ctrl_runtime::cache::CacheObject;
use ctrl_runtime::client::Client;
use ctrl_runtime::reconcile::{
    self, Action, Func, Reconciler, Request, TypedRequest, as_reconciler,
};
use tokio_util::sync::CancellationToken;

/// An input a reconciler may take in a controller of `R` requests whose `For` type is
/// `F` (`()` without one): `R` itself, or, for [`Request`] controllers, `Arc<F>`.
///
/// A reconciler of objects of another type than the `For` type does not compile:
///
/// ```compile_fail
/// # fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), ctrl_builder::Error> {
/// use std::sync::Arc;
/// use ctrl_builder::{ControllerBuilder, reconciler::object_func};
/// use ctrl_runtime::reconcile::Action;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
///
/// ControllerBuilder::new(&mgr)
///     .for_::<ConfigMap>()
///     .complete(object_func(|_ctx, _s: Arc<Secret>| async { Ok(Action::done()) }))
/// # }
/// ```
///
/// nor does a typed controller with `For` (it enqueues namespace/name, not `R`):
///
/// ```compile_fail
/// # fn demo(mgr: ctrl_runtime::manager::Manager) {
/// use ctrl_builder::ControllerBuilder;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// #[derive(Clone, Debug, PartialEq, Eq, Hash)]
/// struct ClusterRequest(String);
/// let _ = ControllerBuilder::<ClusterRequest>::typed(&mgr).for_::<ConfigMap>();
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `Reconciler<{Self}>` cannot run in a controller of `{R}` requests whose For type is `{F}`",
    note = "a reconciler of objects (`Reconciler<Arc<K>>`) needs `.for_::<K>()` of the same `K` (for `for_metadata::<K>()`, `Arc<PartialObjectMeta<K>>`); a typed controller's reconciler takes its request type"
)]
pub trait ReconcilerInput<R: TypedRequest, F>: Send + Sized + 'static {
    /// The request reconciler running `reconciler`, reading objects through `client` if
    /// it needs them.
    fn into_reconciler(
        reconciler: impl Reconciler<Self>,
        client: &Client,
    ) -> Arc<dyn Reconciler<R>>;
}

impl<R: TypedRequest, F> ReconcilerInput<R, F> for R {
    fn into_reconciler(
        reconciler: impl Reconciler<Self>,
        _client: &Client,
    ) -> Arc<dyn Reconciler<R>> {
        Arc::new(reconciler)
    }
}

impl<K: CacheObject<DynamicType = ()>> ReconcilerInput<Request, K> for Arc<K> {
    fn into_reconciler(
        reconciler: impl Reconciler<Self>,
        client: &Client,
    ) -> Arc<dyn Reconciler<Request>> {
        Arc::new(as_reconciler::<K, _, _>(client.clone(), reconciler))
    }
}

/// Makes an object reconciler (`Reconciler<Arc<K>>`) from an async closure over the
/// cached `Arc<K>` (the object counterpart of `reconcile::func`; the same as
/// `reconcile::typed_func` with `Arc<K>`):
///
/// ```no_run
/// # fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), ctrl_builder::Error> {
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
/// # }
/// ```
pub fn object_func<K, F, Fut>(f: F) -> Func<F>
where
    K: Send + Sync + 'static,
    F: Fn(CancellationToken, Arc<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, reconcile::Error>> + Send + 'static,
{
    reconcile::typed_func(f)
}
