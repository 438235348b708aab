//! [`spawn`]: `tokio::spawn` of a boxed future, so that tokio's task machinery (its cell,
//! harness, waker and join-handle code, ~1,400 lines of LLVM IR a copy) is compiled once for
//! every background task spawned through it instead of once per future type, in each crate
//! that spawns through it (`cargo llvm-lines`, docs/benchmarks.md, "Build time"). ctrl-envtest
//! (connections, watches, its controllers) and ctrl-runtime (sources, controllers, servers,
//! elections) both spawn through this one function. The cost is one allocation per spawn (a
//! connection, a watch, a controller), never per event.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;

/// A future as every background task is spawned: boxed, sendable, `()` when done.
pub type Task = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Spawns `task` on the current tokio runtime, as `tokio::spawn` does.
pub fn spawn(task: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    spawn_boxed(Box::pin(task))
}

/// [`spawn`]'s one instantiation of `tokio::spawn`.
fn spawn_boxed(task: Task) -> JoinHandle<()> {
    tokio::spawn(task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_spawned_task_runs_and_its_handle_joins() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let handle = spawn(async move {
            let _ = tx.send(7);
        });
        assert_eq!(rx.await.ok(), Some(7));
        assert!(handle.await.is_ok());
    }
}
