//! [`Deferred`]: a source made only when it starts, after an async step (the
//! discovery lookup a dynamic `For` type's `Owns` handlers need), so that building a
//! controller never waits on the API server.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ctrl_runtime::reconcile::TypedRequest;
use ctrl_runtime::source::{BoxSource, Error, Source};
use ctrl_runtime::workqueue::Queue;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// A source built by a future when the controller starts it.
pub(crate) struct Deferred<R: TypedRequest> {
    name: String,
    build: Mutex<Option<BoxFuture<'static, BoxSource<R>>>>,
    built: tokio::sync::OnceCell<BoxSource<R>>,
}

impl<R: TypedRequest> Deferred<R> {
    /// A source named `name` that `build` makes at start.
    pub(crate) fn new(
        name: String,
        build: impl Future<Output = BoxSource<R>> + Send + 'static,
    ) -> Self {
        Self {
            name,
            build: Mutex::new(Some(Box::pin(build))),
            built: tokio::sync::OnceCell::new(),
        }
    }
}

#[async_trait]
impl<R: TypedRequest> Source<R> for Deferred<R> {
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        let build = self.build.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(build) = build else {
            return Err(Error::msg(format!("{} was already started", self.name)));
        };
        let src = tokio::select! {
            src = build => src,
            _ = ctx.cancelled() => return Ok(()),
        };
        src.start(ctx, queue).await?;
        let _ = self.built.set(src);
        Ok(())
    }

    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        match self.built.get() {
            Some(src) => src.wait_for_sync(ctx).await,
            None => Err(Error::msg(format!("{} was not started", self.name))),
        }
    }

    fn name(&self) -> String {
        match self.built.get() {
            Some(src) => src.name(),
            None => self.name.clone(),
        }
    }
}
