//! The Controller: workers that take requests from a work queue and reconcile them
//! (controller-runtime's `pkg/controller` and `pkg/internal/controller`).
//!
//! A [`Controller`] owns a queue ([`crate::workqueue`]), the sources that fill it
//! ([`crate::source`], each with its handler and predicates) and a
//! [`Reconciler`], all over one request type `R`
//! ([`Request`] by default; any [`TypedRequest`] for Go's `TypedController[request]`).
//! [`Controller::start`] starts the
//! sources in parallel, then runs `max_concurrent_reconciles` workers; the queue
//! guarantees one key is never reconciled by two workers at once. What happens after a
//! reconcile is controller-runtime's `reconcileHandler` (see `handle`); metrics are in
//! [`metrics`]. The builder and manager drive controllers; tests can drive them directly.

mod handle;
pub mod metrics;
mod options;
mod queue;
mod start;

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::reconcile::{Reconciler, Request, TypedRequest};
use crate::source::{BoxSource, Source};
use crate::task::Task;
use crate::workqueue::Queue;

pub use options::{DEFAULT_CACHE_SYNC_TIMEOUT, Error, NewQueueFn, Options};

use self::metrics::ControllerMetrics;

/// A controller: sources -> queue -> workers -> reconciler, over requests of type `R`
/// (Go's `Controller`; `TypedController[R]`). Cheap to clone (shared).
pub struct Controller<R: TypedRequest = Request> {
    inner: Arc<Inner<R>>,
}

impl<R: TypedRequest> Clone for Controller<R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<R: TypedRequest> {
    name: String,
    reconciler: Arc<dyn Reconciler<R>>,
    opts: Options<R>,
    metrics: ControllerMetrics,
    state: tokio::sync::Mutex<State<R>>,
}

struct State<R: TypedRequest> {
    started: bool,
    sources_started: bool,
    ctx: Option<CancellationToken>,
    queue: Option<Arc<dyn Queue<R>>>,
    watches: Vec<BoxSource<R>>,
}

impl<R: TypedRequest> Controller<R> {
    /// A controller named `name` (unique in the process unless
    /// `opts.skip_name_validation`) running `reconciler`.
    pub fn new(
        name: impl Into<String>,
        reconciler: impl Reconciler<R>,
        opts: Options<R>,
    ) -> Result<Self, Error> {
        Self::with_sources(name, reconciler, opts, Vec::new())
    }

    /// [`new`](Self::new) with sources to start, as [`watch`](Self::watch) before
    /// [`start`](Self::start) would add them, without awaiting (the builder's way).
    pub fn with_sources(
        name: impl Into<String>,
        reconciler: impl Reconciler<R>,
        opts: Options<R>,
        sources: Vec<BoxSource<R>>,
    ) -> Result<Self, Error> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::EmptyName);
        }
        if !opts.skips_name_validation() {
            options::claim_name(&name)?;
        }
        let opts = opts.normalized();
        Ok(Self {
            inner: Arc::new(Inner {
                metrics: ControllerMetrics::new(&name),
                name,
                reconciler: Arc::new(reconciler),
                opts,
                state: tokio::sync::Mutex::new(State {
                    started: false,
                    sources_started: false,
                    ctx: None,
                    queue: None,
                    watches: sources,
                }),
            }),
        })
    }

    /// The controller's name (the `controller` metric label).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The options the controller runs with (zero values replaced by defaults).
    pub fn options(&self) -> &Options<R> {
        &self.inner.opts
    }

    /// Whether the controller runs only on the elected leader.
    pub fn need_leader_election(&self) -> bool {
        self.inner.opts.needs_leader_election()
    }

    /// The controller's queue, once started.
    pub async fn queue(&self) -> Option<Arc<dyn Queue<R>>> {
        self.inner.state.lock().await.queue.clone()
    }

    /// Adds a source. Before `start` it is kept and started by `start`; after, it is
    /// started at once (without waiting for it to sync), as controller-runtime does.
    pub async fn watch(&self, source: impl Source<R>) -> Result<(), Error> {
        let mut st = self.inner.state.lock().await;
        let (ctx, queue) = match (&st.ctx, &st.queue, st.sources_started) {
            (Some(ctx), Some(queue), true) => (ctx.clone(), queue.clone()),
            _ => {
                st.watches.push(Arc::new(source));
                return Ok(());
            }
        };
        let source_name = source.name();
        tracing::info!(controller = %self.inner.name, source = %source_name, "Starting EventSource");
        source
            .start(ctx, queue)
            .await
            .map_err(|error| Error::SourceStart { source_name, error })
    }

    /// Starts the sources before leader election (Go's `Controller.Warmup`), when
    /// `enable_warmup` is on; does nothing otherwise or if they already started.
    /// Builds the queue and starts every source under `ctx`, each bounded by
    /// `cache_sync_timeout`, and returns once they synced; events then fill the
    /// queue, and [`Controller::start`] (on the elected leader) only adds workers.
    /// The manager calls this in its Warmup group, on every replica.
    pub async fn warmup(&self, ctx: CancellationToken) -> Result<(), Error> {
        if !self.inner.opts.warms_up() {
            return Ok(());
        }
        let mut st = self.inner.state.lock().await;
        if st.queue.is_some() {
            return Ok(());
        }
        tracing::info!(controller = %self.inner.name, "Warming up: starting event sources before leader election");
        let queue = self.start_sources(&mut st, &ctx).await?;
        shut_down_with(&ctx, queue);
        Ok(())
    }

    /// Builds the queue and starts the stored sources under `ctx`, unless done
    /// already (by a warmup); returns the queue.
    async fn start_sources(
        &self,
        st: &mut State<R>,
        ctx: &CancellationToken,
    ) -> Result<Arc<dyn Queue<R>>, Error> {
        let inner = &self.inner;
        if let Some(queue) = &st.queue {
            return Ok(queue.clone());
        }
        let queue = queue::new_queue(&inner.name, &inner.opts);
        st.ctx = Some(ctx.clone());
        st.queue = Some(queue.clone());
        let watches = std::mem::take(&mut st.watches);
        let started = futures::future::join_all(
            watches
                .into_iter()
                .map(|src| start::start_source(inner, src, ctx, &queue)),
        )
        .await;
        st.sources_started = true;
        match started.into_iter().find_map(Result::err) {
            Some(err) => Err(err),
            None => Ok(queue),
        }
    }

    /// Runs the controller until `ctx` is cancelled: builds the queue, starts every
    /// source (in parallel, each bounded by `cache_sync_timeout`) unless a
    /// [`warmup`](Controller::warmup) did, then runs the workers. On cancel it shuts
    /// the queue down, starts no new reconcile and waits for those in flight. With
    /// `recover_panic = false` a reconciler's panic propagates out of this call.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        let inner = &self.inner;
        let mut st = inner.state.lock().await;
        if st.started {
            return Err(Error::AlreadyStarted);
        }
        st.started = true;
        inner.metrics.init(inner.opts.max_concurrent_reconciles);
        let queue = self.start_sources(&mut st, &ctx).await?;
        shut_down_with(&ctx, queue.clone());
        let n = inner.opts.max_concurrent_reconciles;
        tracing::info!(controller = %inner.name, "Starting Controller");
        tracing::info!(controller = %inner.name, worker_count = n, "Starting workers");
        let mut workers = JoinSet::new();
        for _ in 0..n {
            workers.spawn(Box::pin(worker(inner.clone(), queue.clone(), ctx.clone())) as Task);
        }
        drop(st);

        loop {
            tokio::select! {
                _ = ctx.cancelled() => break,
                Some(res) = workers.join_next() => rethrow(res, &*queue),
            }
        }
        tracing::info!(controller = %inner.name, "Shutdown signal received, waiting for all workers to finish");
        while let Some(res) = workers.join_next().await {
            rethrow(res, &*queue);
        }
        tracing::info!(controller = %inner.name, "All workers finished");
        Ok(())
    }
}

/// Shuts `queue` down once `ctx` is cancelled (the start's, or the warmup's).
fn shut_down_with<R: TypedRequest>(ctx: &CancellationToken, queue: Arc<dyn Queue<R>>) {
    let ctx = ctx.clone();
    crate::task::spawn(async move {
        ctx.cancelled().await;
        queue.shut_down();
    });
}

/// Re-raises a worker's panic (only unrecovered reconciler panics end a worker early).
fn rethrow<R: TypedRequest>(res: Result<(), tokio::task::JoinError>, queue: &dyn Queue<R>) {
    if let Err(e) = res
        && e.is_panic()
    {
        queue.shut_down();
        std::panic::resume_unwind(e.into_panic());
    }
}

/// One worker: take a request, reconcile it, mark it done; until the queue shuts down.
async fn worker<R: TypedRequest>(
    inner: Arc<Inner<R>>,
    queue: Arc<dyn Queue<R>>,
    ctx: CancellationToken,
) {
    while let Some((req, priority, triggers)) = queue.get_triggered_boxed().await {
        if ctx.is_cancelled() {
            queue.done(&req);
            break;
        }
        let active = Active::new(&inner.metrics.active);
        let panic = inner
            .reconcile_handler(&ctx, &*queue, &req, priority, triggers)
            .await;
        drop(active);
        queue.done(&req);
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    }
}

/// Counts one worker in `controller_runtime_active_workers` while alive, so a worker
/// aborted mid-reconcile (at the end of the manager's grace period) is uncounted too.
struct Active(prometheus::IntGauge);

impl Active {
    fn new(gauge: &prometheus::IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.dec();
    }
}
