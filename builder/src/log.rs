//! The log constructor (controller-runtime's `Options.LogConstructor`, in `tracing`
//! terms): a function from the request (or `None`, for the controller itself) to the
//! span the reconcile runs in. The controller's own `reconcile` span (controller,
//! group, kind, namespace, name, reconcileID) stays the parent.

use std::sync::Arc;

use async_trait::async_trait;
use ctrl_runtime::reconcile::{Action, Error, Reconciler, TypedRequest};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Builds the span for a request (`Some`) or for the controller (`None`).
pub(crate) type LogConstructor<R> = Arc<dyn Fn(Option<&R>) -> tracing::Span + Send + Sync>;

/// A reconciler whose reconciles run inside the constructor's span.
pub(crate) struct Logged<R: TypedRequest> {
    pub(crate) inner: Arc<dyn Reconciler<R>>,
    pub(crate) ctor: LogConstructor<R>,
}

#[async_trait]
impl<R: TypedRequest> Reconciler<R> for Logged<R> {
    async fn reconcile(&self, ctx: CancellationToken, req: R) -> Result<Action, Error> {
        let span = (self.ctor)(Some(&req));
        self.inner.reconcile(ctx, req).instrument(span).await
    }
}
