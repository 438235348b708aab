//! A boxed [`Source`] that is itself a `Source`, so the builder can hold sources of
//! different types in one list and hand them to `Controller::watch`.

use std::sync::Arc;

use async_trait::async_trait;
use ctrl_runtime::reconcile::Request;
use ctrl_runtime::source::{Error, Source};
use ctrl_runtime::workqueue::Queue;
use tokio_util::sync::CancellationToken;

/// Any source, boxed.
pub(crate) struct Boxed(pub(crate) Box<dyn Source>);

#[async_trait]
impl Source for Boxed {
    async fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Queue<Request>>,
    ) -> Result<(), Error> {
        self.0.start(ctx, queue).await
    }

    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        self.0.wait_for_sync(ctx).await
    }

    fn name(&self) -> String {
        self.0.name()
    }
}
