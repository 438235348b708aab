//! Reconcilers: the user code a controller drives (controller-runtime's `pkg/reconcile`).
//!
//! A [`Request`] names one object; the controller takes requests from its work queue
//! and hands them to a [`Reconciler`], then acts on the returned [`Action`] or
//! [`Error`]. Event handlers are what put requests in the queue. Both sit above this
//! module; below it is only the work queue, whose trigger sets
//! ([`crate::workqueue::Triggers`]) [`triggers`] hands to a running reconcile.
//!
//! There is one reconciler trait, [`Reconciler<R>`](Reconciler), and what it receives is
//! its type parameter: `Reconciler` (= `Reconciler<Request>`) gets namespace/name,
//! `Reconciler<Arc<K>>` gets the object itself (Go's `ObjectReconciler`; the builder or
//! [`as_reconciler`] reads it through an [`ObjectGetter`], the cache), and
//! `Reconciler<MyRequest>` gets the request of a typed controller (Go's
//! `TypedReconciler[request]`; any [`TypedRequest`]). [`func`] and [`typed_func`] make
//! reconcilers from closures. [`triggers`] tells a running reconcile why it ran.

mod action;
mod error;
mod object;
mod request;

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use action::Action;
pub use error::Error;
pub use object::{ObjectGetter, ObjectReconcilerAdapter, as_reconciler};
pub use request::{Request, TypedRequest};

use crate::workqueue::Triggers;

tokio::task_local! {
    static RECONCILE_ID: uuid::Uuid;
    static TRIGGERS: Arc<Triggers>;
}

/// Brings the state of the world closer to what one object asks for
/// (controller-runtime's `reconcile.Reconciler`, `TypedReconciler[request]` and
/// `ObjectReconciler[T]` in one trait).
///
/// `R` is what `reconcile` receives: a [`Request`] (the default), a typed controller's
/// own request type, or `Arc<K>` for a reconciler of whole objects of a `For` type `K`
/// (the builder reads the object from the cache and skips requests for objects that
/// are gone). Reconcile is level-based: it gets the object's key (or the object), never
/// the event, and must read what else it needs. `ctx` is cancelled when the controller shuts down. When the
/// controller's `reconciliation_timeout` passes, or the manager's grace period ends, the
/// reconcile's future is dropped at its current `.await` (see the controllers guide,
/// "Timeouts and shutdown").
#[async_trait]
pub trait Reconciler<R: Send + 'static = Request>: Send + Sync + 'static {
    /// Reconciles what `req` names; see [`Action`] for what the result means.
    async fn reconcile(&self, ctx: CancellationToken, req: R) -> Result<Action, Error>;
}

/// A [`Reconciler`] made from a closure, returned by [`func`] and [`typed_func`].
pub struct Func<F>(F);

/// Makes a [`Reconciler`] from an async closure (controller-runtime's `reconcile.Func`).
///
/// ```
/// use ctrl_runtime::reconcile::{self, Action};
/// let r = reconcile::func(|_ctx, req| async move {
///     tracing::info!(%req, "reconciling");
///     Ok(Action::done())
/// });
/// # let _ = r;
/// ```
pub fn func<F, Fut>(f: F) -> Func<F>
where
    F: Fn(CancellationToken, Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    Func(f)
}

/// Makes a [`Reconciler<R>`](Reconciler) from an async closure over `R`
/// (controller-runtime's `reconcile.TypedFunc`): a typed controller's request, or
/// `Arc<K>` for an object reconciler. Annotate the closure's argument:
///
/// ```
/// use std::sync::Arc;
/// use ctrl_runtime::reconcile::{self, Action};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// let r = reconcile::typed_func(|_ctx, cm: Arc<ConfigMap>| async move {
///     tracing::info!(name = ?cm.metadata.name, "reconciling");
///     Ok(Action::done())
/// });
/// # let _ = r;
/// ```
pub fn typed_func<R, F, Fut>(f: F) -> Func<F>
where
    R: Send + 'static,
    F: Fn(CancellationToken, R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    Func(f)
}

#[async_trait]
impl<R, F, Fut> Reconciler<R> for Func<F>
where
    R: Send + 'static,
    F: Fn(CancellationToken, R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    async fn reconcile(&self, ctx: CancellationToken, req: R) -> Result<Action, Error> {
        (self.0)(ctx, req).await
    }
}

#[async_trait]
impl<R: Send + 'static, X: Reconciler<R> + ?Sized> Reconciler<R> for std::sync::Arc<X> {
    async fn reconcile(&self, ctx: CancellationToken, req: R) -> Result<Action, Error> {
        (**self).reconcile(ctx, req).await
    }
}

/// The id of the reconcile running on this task (controller-runtime's
/// `ReconcileIDFromContext`); `None` outside a controller's reconcile.
///
/// The same id is the `reconcileID` field of the reconcile's `tracing` span.
pub fn reconcile_id() -> Option<uuid::Uuid> {
    RECONCILE_ID.try_with(|id| *id).ok()
}

/// Why the reconcile running on this task ran: the triggers its queue kept for the key
/// since the key was last taken (see [`crate::workqueue::triggers`]) — the events that
/// queued it (`For` / `Owns` / `Watches` / map func / channel, the event, the object and
/// its resourceVersion, initial-list creates marked) and the controller's own requeues
/// (error backoff, `requeue_after`, `requeue`), merged and capped. Empty outside a
/// reconcile, or when the controller's `record_triggers` is off.
///
/// ```
/// # async fn reconcile() {
/// for t in ctrl_runtime::reconcile::triggers().iter() {
///     tracing::info!(trigger = %t, "reconcile triggered");
/// }
/// # }
/// ```
///
/// The same set is the `triggers` field of the reconcile's `tracing` span.
pub fn triggers() -> Arc<Triggers> {
    TRIGGERS.try_with(Arc::clone).unwrap_or_default()
}

/// Runs `fut` with `id` as its [`reconcile_id`] and `triggers` as its [`triggers`]; used
/// by the controller.
pub(crate) async fn with_reconcile_id<F: Future>(
    id: uuid::Uuid,
    triggers: Arc<Triggers>,
    fut: F,
) -> F::Output {
    RECONCILE_ID.scope(id, TRIGGERS.scope(triggers, fut)).await
}
