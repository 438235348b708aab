//! [`spawn`]: `tokio::spawn` of a boxed future, so that tokio's task machinery (its cell,
//! harness, waker and join-handle code) is compiled once for every background task of the
//! server instead of once per future type (`cargo llvm-lines`: ~26,000 lines of LLVM IR for
//! eleven future types on both schedulers; docs/benchmarks.md, "Build time"). The same helper
//! as ctrl-runtime's `task::spawn`. The cost is one allocation per spawn (a connection, a
//! watch, a controller), never per event.
//!
//! A leaf: it imports nothing from the crate.

use std::future::Future;

use futures::future::BoxFuture;
use tokio::task::JoinHandle;

/// Spawns `task` on the current tokio runtime, as `tokio::spawn` does.
pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    spawn_boxed(Box::pin(task))
}

/// [`spawn`]'s one instantiation of `tokio::spawn`.
fn spawn_boxed(task: BoxFuture<'static, ()>) -> JoinHandle<()> {
    tokio::spawn(task)
}
