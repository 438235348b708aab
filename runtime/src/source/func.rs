//! [`Func`]: a source made from a closure (controller-runtime's `source.Func`).

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Error, Source};
use crate::reconcile::TypedRequest;
use crate::workqueue::triggers::{Event, Origin};
use crate::workqueue::{Queue, Stamped, Trigger};

/// A [`Source`] whose `start` is a closure given the context and the queue (of
/// `Request`s, or of a typed controller's requests). The closure must not block: spawn
/// a task for long-running work.
pub struct Func<F> {
    f: F,
    name: String,
}

impl<F> Func<F> {
    /// A source that runs `f` when started.
    pub fn new<R, Fut>(f: F) -> Self
    where
        R: TypedRequest,
        F: Fn(CancellationToken, Arc<dyn Queue<R>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        Self {
            f,
            name: "func source".to_string(),
        }
    }

    /// Names the source in logs and errors.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R, F, Fut> Source<R> for Func<F>
where
    R: TypedRequest,
    F: Fn(CancellationToken, Arc<dyn Queue<R>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), Error>> + Send + 'static,
{
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        if !queue.records_triggers() {
            return (self.f)(ctx, queue).await;
        }
        let stamped = Stamped::new(queue, Trigger::new(Origin::Func, Event::Generic));
        (self.f)(ctx, Arc::new(stamped)).await
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
