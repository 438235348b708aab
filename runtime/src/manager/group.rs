//! One runnable group (controller-runtime's `runnableGroup`): runnables added before
//! the group starts are queued and started together, the group's start waiting for
//! each to be ready; runnables added later start at once; stopping cancels the group's
//! own token and waits for its runnables, up to a deadline, then aborts those still
//! running.
//!
//! Each group has its own token, not a child of the manager's: the manager cancels
//! the groups one by one, which is what gives the ordered shutdown.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Error, Group, Runnable};
use crate::error::panic_message;

#[derive(Default)]
struct State {
    started: bool,
    stopped: bool,
    queue: Vec<Arc<dyn Runnable>>,
    running: BTreeMap<u64, (String, AbortHandle)>,
    next_id: u64,
}

pub(super) struct RunnableGroup {
    group: Group,
    ctx: CancellationToken,
    errors: mpsc::UnboundedSender<Error>,
    tasks: TaskTracker,
    state: Mutex<State>,
}

impl RunnableGroup {
    pub(super) fn new(group: Group, errors: mpsc::UnboundedSender<Error>) -> Arc<Self> {
        Arc::new(Self {
            group,
            ctx: CancellationToken::new(),
            errors,
            tasks: TaskTracker::new(),
            state: Mutex::new(State::default()),
        })
    }

    /// Queues `r` (before start) or starts it at once (after). Fails once stopping.
    pub(super) fn add(self: &Arc<Self>, r: Arc<dyn Runnable>) -> Result<(), Error> {
        let mut st = self.state.lock();
        if st.stopped {
            return Err(Error::Stopped);
        }
        if !st.started {
            st.queue.push(r);
            return Ok(());
        }
        self.spawn(&mut st, r, None);
        Ok(())
    }

    pub(super) fn is_started(&self) -> bool {
        self.state.lock().started
    }

    /// Starts the queued runnables and waits until each reports ready. Returns at once
    /// if already started or stopped; returns `Ok` early if the group is stopped while
    /// waiting; fails if a runnable reports it cannot become ready.
    pub(super) async fn start(self: &Arc<Self>) -> Result<(), Error> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let n = {
            let mut st = self.state.lock();
            if st.started || st.stopped {
                return Ok(());
            }
            st.started = true;
            let queue = std::mem::take(&mut st.queue);
            let n = queue.len();
            for r in queue {
                self.spawn(&mut st, r, Some(tx.clone()));
            }
            n
        };
        drop(tx);
        tracing::debug!(
            group = self.group.as_str(),
            runnables = n,
            "Starting runnable group"
        );
        for _ in 0..n {
            match rx.recv().await {
                Some((_, true)) => {}
                Some((name, false)) if !self.ctx.is_cancelled() => {
                    return Err(Error::NotReady {
                        group: self.group.as_str(),
                        name,
                    });
                }
                Some((_, false)) | None => return Ok(()),
            }
        }
        Ok(())
    }

    fn spawn(
        self: &Arc<Self>,
        st: &mut State,
        r: Arc<dyn Runnable>,
        ready: Option<mpsc::UnboundedSender<(String, bool)>>,
    ) {
        let id = st.next_id;
        st.next_id += 1;
        let name = r.name();
        if let Some(ready) = ready {
            let (r, ctx, name) = (r.clone(), self.ctx.clone(), name.clone());
            crate::task::spawn(async move {
                let ok = r.wait_ready(ctx).await;
                let _ = ready.send((name, ok));
            });
        }
        let group = self.clone();
        let ctx = self.ctx.clone();
        let task_name = name.clone();
        // The task removes itself from `running` under the state lock, which the
        // caller holds: it cannot do so before it is inserted below.
        let handle = self.tasks.spawn(async move {
            tracing::debug!(group = group.group.as_str(), runnable = %name, "Starting runnable");
            let res = AssertUnwindSafe(r.start(ctx)).catch_unwind().await;
            let stopped = {
                let mut st = group.state.lock();
                st.running.remove(&id);
                st.stopped
            };
            let err = match res {
                Ok(Ok(())) => return,
                Ok(Err(source)) => Error::Runnable { name, source },
                Err(payload) => Error::Panicked {
                    name,
                    message: panic_message(&*payload).to_string(),
                },
            };
            if stopped {
                tracing::error!(error = %err, "error received after stop sequence was engaged");
            } else if let Err(e) = group.errors.send(err) {
                tracing::error!(error = %e.0, "error received after the manager stopped");
            }
        });
        st.running.insert(id, (task_name, handle.abort_handle()));
    }

    /// Stops accepting runnables, drops the ones never started, cancels the group's
    /// token and waits for its runnables until `deadline` (`None`: forever). True if
    /// they all returned; otherwise those still running are aborted (their futures
    /// dropped, as the end of Go's grace period abandons them) and keep their names
    /// in [`running`](Self::running).
    pub(super) async fn stop_and_wait(&self, deadline: Option<Instant>) -> bool {
        {
            let mut st = self.state.lock();
            st.stopped = true;
            let dropped = std::mem::take(&mut st.queue);
            if !dropped.is_empty() {
                tracing::debug!(
                    group = self.group.as_str(),
                    never_started = dropped.len(),
                    "Dropping runnables that never started"
                );
            }
        }
        self.ctx.cancel();
        self.tasks.close();
        match deadline {
            None => {
                self.tasks.wait().await;
                true
            }
            Some(d) => {
                if tokio::time::timeout_at(d, self.tasks.wait()).await.is_ok() {
                    return true;
                }
                for (name, task) in self.state.lock().running.values() {
                    tracing::warn!(group = self.group.as_str(), runnable = %name, "Aborting a runnable still running at the end of the grace period");
                    task.abort();
                }
                false
            }
        }
    }

    /// Stops at once, waiting for nothing: no runnable starts any more, the group's token
    /// is cancelled and every runnable still running is aborted (its future dropped where it
    /// stands). What a dropped [`Manager::start`](super::Manager::start) does: the process
    /// is gone.
    pub(super) fn abort(&self) {
        let mut st = self.state.lock();
        st.stopped = true;
        st.queue.clear();
        self.ctx.cancel();
        self.tasks.close();
        for (_, task) in st.running.values() {
            task.abort();
        }
    }

    /// The names of the runnables still running.
    pub(super) fn running(&self) -> Vec<String> {
        let st = self.state.lock();
        st.running.values().map(|(name, _)| name.clone()).collect()
    }
}
