//! Sources: where a controller's events come from (controller-runtime's `pkg/source`).
//!
//! A [`Source`] is started by a controller with the controller's
//! work queue. It produces events ([`crate::event`]), filters them through predicates
//! ([`crate::predicate`]) and hands them to an event handler ([`crate::handler`]), which
//! adds requests to the queue. [`Channel`] turns a stream of generic events into a
//! source; [`Func`] makes one from a closure; [`Kind`] is the cache-backed watch of one
//! type ([`crate::cache`]); [`Informer`] is fed by an informer the caller holds.
//!
//! A source fills a queue of any [`TypedRequest`] type `R` (Go's `TypedSource[request]`),
//! [`Request`] by default; its handler decides which requests an event becomes.

mod channel;
mod func;
mod informer;
mod kind;
mod trigger;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;

pub use channel::{Channel, DEFAULT_BUFFER_SIZE};
pub use func::Func;
pub use informer::Informer;
pub use kind::{KIND_RETRY_INTERVAL, Kind};

/// Why a source failed to start or sync.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A stream-backed source was started after its stream ended.
    #[error("source {0} was already drained")]
    Drained(String),
    /// Any other failure.
    #[error(transparent)]
    Other(#[from] Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl Error {
    /// An error with a message.
    pub fn msg(msg: impl Into<String>) -> Self {
        Self::Other(msg.into().into())
    }
}

/// A stream of events for a controller (controller-runtime's `source.Source`, with
/// `SyncingSource`'s `WaitForSync` folded in; `TypedSource[R]`).
///
/// `start` must not block: it spawns what it needs (bound to `ctx`) and returns. The
/// controller gives each source `cache_sync_timeout` to start and then to sync.
#[async_trait]
pub trait Source<R: TypedRequest = Request>: Send + Sync + 'static {
    /// Starts delivering events into `queue` until `ctx` is cancelled.
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error>;

    /// Resolves once the source's cache has synced; sources without a cache are
    /// synced at once. Should give up with an error when `ctx` is cancelled.
    async fn wait_for_sync(&self, _ctx: CancellationToken) -> Result<(), Error> {
        Ok(())
    }

    /// A name for logs and errors (Go's `String()`).
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_string()
    }
}

/// A shared source.
pub type BoxSource<R = Request> = Arc<dyn Source<R>>;

#[async_trait]
impl<R: TypedRequest, S: Source<R> + ?Sized> Source<R> for Arc<S> {
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        (**self).start(ctx, queue).await
    }
    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        (**self).wait_for_sync(ctx).await
    }
    fn name(&self) -> String {
        (**self).name()
    }
}
