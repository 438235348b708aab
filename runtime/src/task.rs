//! [`spawn`]: `tokio::spawn` of a boxed future, so that tokio's task machinery (its
//! cell, harness, waker and join-handle code, ~1,400 lines of LLVM IR a copy) is compiled
//! once for the background tasks spawned through it instead of once per future type, and
//! once per object type in an operator's crate (`cargo llvm-lines`, docs/benchmarks.md
//! "Build time"). Sources, controllers, servers and elections spawn through it; the cache's
//! informers and handler sinks, the webhook server's certificate watch, and the optional
//! multicluster and sharding modules still call `tokio::spawn`. The cost is one allocation
//! per spawn, never per event. ctrl-envtest has the same helper (`envtest/src/task.rs`);
//! both belong in ctrl-net, below both crates.
//!
//! A leaf: it imports nothing from the crate.

use std::future::Future;

use futures::future::BoxFuture;
use tokio::task::JoinHandle;

/// A future as every runtime task is spawned: boxed, sendable, `()` when done.
pub type Task = BoxFuture<'static, ()>;

/// Spawns `task` on the current tokio runtime, as `tokio::spawn` does.
pub fn spawn(task: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    spawn_boxed(Box::pin(task))
}

/// [`spawn`]'s one instantiation of `tokio::spawn`.
fn spawn_boxed(task: Task) -> JoinHandle<()> {
    tokio::spawn(task)
}
