//! Reconcilers: the user code a controller drives (controller-runtime's `pkg/reconcile`).
//!
//! A [`Request`] names one object; the controller (`crate::controller`) takes requests
//! from its work queue and hands them to a [`Reconciler`], then acts on the returned
//! [`Action`] or [`Error`]. Event handlers (`crate::handler`) are what put requests in
//! the queue. [`func`] turns a closure into a reconciler, and [`as_reconciler`] adapts a
//! reconciler of whole objects over an [`ObjectGetter`] (the cache, once it lands).

mod action;
mod error;
mod object;
mod request;

use std::future::Future;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use action::Action;
pub use error::Error;
pub use object::{ObjectGetter, ObjectReconciler, ObjectReconcilerAdapter, as_reconciler};
pub use request::Request;

tokio::task_local! {
    static RECONCILE_ID: uuid::Uuid;
}

/// Brings the state of the world closer to what one object asks for
/// (controller-runtime's `reconcile.Reconciler`).
///
/// Reconcile is level-based: it gets only the object's key, never the event, and must
/// read what it needs. `ctx` is cancelled when the controller shuts down. When the
/// controller's `reconciliation_timeout` passes, or the manager's grace period ends, the
/// reconcile's future is dropped at its current `.await` (see the controllers guide,
/// "Timeouts and shutdown").
#[async_trait]
pub trait Reconciler: Send + Sync + 'static {
    /// Reconciles the object `req` names; see [`Action`] for what the result means.
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error>;
}

/// A [`Reconciler`] made from a closure, returned by [`func`].
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

#[async_trait]
impl<F, Fut> Reconciler for Func<F>
where
    F: Fn(CancellationToken, Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        (self.0)(ctx, req).await
    }
}

#[async_trait]
impl<R: Reconciler + ?Sized> Reconciler for std::sync::Arc<R> {
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error> {
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

/// Runs `fut` with `id` as its [`reconcile_id`]; used by the controller.
pub(crate) async fn with_reconcile_id<F: Future>(id: uuid::Uuid, fut: F) -> F::Output {
    RECONCILE_ID.scope(id, fut).await
}
