//! Starting one source under the cache sync timeout (Go's
//! `startEventSourcesAndQueueLocked`, per source).

use std::sync::Arc;

use tokio::time::{Instant, timeout_at};
use tokio_util::sync::CancellationToken;

use super::{Error, Inner};
use crate::reconcile::TypedRequest;
use crate::source::BoxSource;
use crate::workqueue::Queue;

/// Starts `src` and waits for it to sync, each bounded by the same deadline
/// (`cache_sync_timeout` from now). A cancelled `ctx` during start is not an error.
pub(super) async fn start_source<R: TypedRequest>(
    inner: &Inner<R>,
    src: BoxSource<R>,
    ctx: &CancellationToken,
    queue: &Arc<dyn Queue<R>>,
) -> Result<(), Error> {
    let source_name = src.name();
    tracing::info!(controller = %inner.name, source = %source_name, "Starting EventSource");
    let deadline = Instant::now() + inner.opts.cache_sync_timeout;
    let started = tokio::select! {
        _ = ctx.cancelled() => return Ok(()),
        r = timeout_at(deadline, src.start(ctx.clone(), queue.clone())) => r,
    };
    match started {
        Err(_) => return Err(Error::SourceStartTimeout(source_name)),
        Ok(Err(error)) => return Err(Error::SourceStart { source_name, error }),
        Ok(Ok(())) => {}
    }
    let sync_ctx = ctx.child_token();
    let reason = match timeout_at(deadline, src.wait_for_sync(sync_ctx.clone())).await {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(_) => {
            sync_ctx.cancel();
            "timed out waiting for cache to be synced".to_string()
        }
    };
    let err = Error::CacheSync {
        controller: inner.name.clone(),
        source_name,
        reason,
    };
    tracing::error!(controller = %inner.name, error = %err, "Could not wait for Cache to sync");
    Err(err)
}
