//! The log constructor (controller-runtime's `Options.LogConstructor`, in `tracing`
//! terms): a function from the request (or `None`, for the controller itself) to the
//! span the reconcile runs in. The controller's own `reconcile` span (controller,
//! group, kind, namespace, name, reconcileID) stays the parent.

use std::sync::Arc;

use async_trait::async_trait;
use ctrl_runtime::reconcile::{Action, Error, Reconciler, Request};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Builds the span for a request (`Some`) or for the controller (`None`).
pub(crate) type LogConstructor = Arc<dyn Fn(Option<&Request>) -> tracing::Span + Send + Sync>;

/// A reconciler whose reconciles run inside the constructor's span.
pub(crate) struct Logged {
    pub(crate) inner: Arc<dyn Reconciler>,
    pub(crate) ctor: LogConstructor,
}

#[async_trait]
impl Reconciler for Logged {
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        let span = (self.ctor)(Some(&req));
        self.inner.reconcile(ctx, req).instrument(span).await
    }
}
