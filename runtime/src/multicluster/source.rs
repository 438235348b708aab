//! [`ClusterSource`]: one source per engaged cluster, fanned out from a
//! multi-cluster controller (multicluster-runtime's `mcsource.Kind` and its
//! `ForCluster`), and [`ClusterQueue`], the queue each cluster's source fills: it
//! stamps the cluster on every request.
//!
//! A cluster's source runs on a child of the cluster's work token, also cancelled with
//! the controller's: disengaging the cluster (or losing its ownership) stops its
//! watches, stopping the controller stops them all. The per-cluster sources are ordinary [`crate::source`]s of
//! [`Request`]s with ordinary handlers; only the queue they fill knows the cluster.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Aware, Cluster, ClusterName, ClusterRequest, Manager};
use crate::error::BoxError;
use crate::reconcile::Request;
use crate::source::{BoxSource, Error, Source};
use crate::workqueue::{AddOpts, Queue, Trigger};

/// Builds the source of one cluster (e.g. a [`crate::source::Kind`] over the
/// cluster's cache with an ordinary handler).
pub type SourceFactory = Arc<dyn Fn(&Cluster) -> BoxSource<Request> + Send + Sync>;

/// Which clusters a controller works on.
pub type ClusterFilter = Arc<dyn Fn(&Cluster) -> bool + Send + Sync>;

/// The queue of one cluster's sources: adds go to the controller's queue of
/// [`ClusterRequest`]s with the cluster's name, with their triggers when the queue
/// keeps them. Sources only add; taking items out and shutting down are the
/// controller's, so those do nothing here.
pub struct ClusterQueue {
    cluster: ClusterName,
    inner: Arc<dyn Queue<ClusterRequest>>,
}

impl ClusterQueue {
    /// The requests of `cluster`, into `inner`.
    pub fn new(cluster: ClusterName, inner: Arc<dyn Queue<ClusterRequest>>) -> Self {
        Self { cluster, inner }
    }

    fn stamp(&self, req: Request) -> ClusterRequest {
        ClusterRequest::from_request(self.cluster.clone(), req)
    }
}

impl Queue<Request> for ClusterQueue {
    fn add(&self, item: Request) {
        self.inner.add(self.stamp(item));
    }
    fn add_after(&self, item: Request, delay: Duration) {
        self.inner.add_after(self.stamp(item), delay);
    }
    fn add_rate_limited(&self, item: Request) {
        self.inner.add_rate_limited(self.stamp(item));
    }
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        self.inner.add_with_opts(opts, self.stamp(item));
    }
    fn get_boxed(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
        Box::pin(async { None })
    }
    fn done(&self, item: &Request) {
        self.inner.done(&self.stamp(item.clone()));
    }
    fn forget(&self, item: &Request) {
        self.inner.forget(&self.stamp(item.clone()));
    }
    fn num_requeues(&self, item: &Request) -> usize {
        self.inner.num_requeues(&self.stamp(item.clone()))
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn shut_down(&self) {}
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn shutting_down(&self) -> bool {
        self.inner.shutting_down()
    }
    fn is_priority(&self) -> bool {
        self.inner.is_priority()
    }
    fn add_triggered(&self, opts: AddOpts, item: Request, trigger: Trigger) {
        self.inner.add_triggered(opts, self.stamp(item), trigger);
    }
    fn add_triggered_ref(&self, opts: AddOpts, item: Request, trigger: &Trigger) {
        self.inner
            .add_triggered_ref(opts, self.stamp(item), trigger);
    }
    fn records_triggers(&self) -> bool {
        self.inner.records_triggers()
    }
}

/// A source of [`ClusterRequest`]s over every engaged cluster that passes the filter:
/// on each cluster engaged (now or later) it starts the factory's source with a
/// [`ClusterQueue`]. [`Source::wait_for_sync`] waits for the clusters worked on when it
/// started (those still worked on).
pub struct ClusterSource {
    mgr: Manager,
    name: String,
    factory: SourceFactory,
    filter: Option<ClusterFilter>,
    synced: watch::Sender<HashSet<ClusterName>>,
    initial: parking_lot::Mutex<Vec<ClusterName>>,
}

impl ClusterSource {
    /// A source named `name` (for logs) building each cluster's source with `factory`.
    pub fn new(mgr: &Manager, name: impl Into<String>, factory: SourceFactory) -> Self {
        Self {
            mgr: mgr.clone(),
            name: name.into(),
            factory,
            filter: None,
            synced: watch::channel(HashSet::new()).0,
            initial: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Only clusters for which `filter` is true.
    pub fn with_filter(mut self, filter: Option<ClusterFilter>) -> Self {
        self.filter = filter;
        self
    }
}

#[async_trait]
impl Source<ClusterRequest> for ClusterSource {
    async fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Queue<ClusterRequest>>,
    ) -> Result<(), Error> {
        *self.initial.lock() = working(&self.mgr);
        self.mgr.add_aware(Arc::new(Engager {
            name: self.name.clone(),
            factory: self.factory.clone(),
            filter: self.filter.clone(),
            ctx,
            queue,
            synced: self.synced.clone(),
        }));
        Ok(())
    }

    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        let initial = self.initial.lock().clone();
        let mut synced = self.synced.subscribe();
        let mgr = self.mgr.clone();
        let all = move |s: &HashSet<ClusterName>| {
            let now = working(&mgr);
            initial.iter().all(|c| s.contains(c) || !now.contains(c))
        };
        tokio::select! {
            r = synced.wait_for(all) => r.map(|_| ()).map_err(|e| Error::msg(e.to_string())),
            _ = ctx.cancelled() => Err(Error::msg("cancelled before the clusters synced")),
        }
    }

    fn name(&self) -> String {
        format!("multicluster/{}", self.name)
    }
}

/// The clusters this replica works on now.
fn working(mgr: &Manager) -> Vec<ClusterName> {
    mgr.work_state()
        .into_iter()
        .filter_map(|(name, working)| working.then_some(name))
        .collect()
}

/// What a started [`ClusterSource`] registers on the manager.
struct Engager {
    name: String,
    factory: SourceFactory,
    filter: Option<ClusterFilter>,
    ctx: CancellationToken,
    queue: Arc<dyn Queue<ClusterRequest>>,
    synced: watch::Sender<HashSet<ClusterName>>,
}

impl Aware for Engager {
    fn engage(&self, cluster: &Cluster, token: CancellationToken) -> Result<(), BoxError> {
        if self.ctx.is_cancelled() {
            return Ok(());
        }
        if self.filter.as_ref().is_some_and(|f| !f(cluster)) {
            // Nothing to sync: a filtered-out cluster must not hold up wait_for_sync.
            self.synced.send_modify(|s| {
                s.insert(cluster.name().clone());
            });
            return Ok(());
        }
        let token = token.child_token();
        let (ctx, stop) = (self.ctx.clone(), token.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = ctx.cancelled() => stop.cancel(),
                _ = stop.cancelled() => {}
            }
        });
        let src = (self.factory)(cluster);
        let queue: Arc<dyn Queue<Request>> = Arc::new(ClusterQueue::new(
            cluster.name().clone(),
            self.queue.clone(),
        ));
        let (name, cluster, synced) = (
            self.name.clone(),
            cluster.name().clone(),
            self.synced.clone(),
        );
        tokio::spawn(async move {
            tracing::info!(source = %name, %cluster, "Starting EventSource for cluster");
            if let Err(error) = src.start(token.clone(), queue).await {
                tracing::error!(source = %name, %cluster, %error, "source failed to start");
                return;
            }
            match src.wait_for_sync(token).await {
                Ok(()) => {
                    synced.send_modify(|s| {
                        s.insert(cluster);
                    });
                }
                Err(error) => {
                    tracing::warn!(source = %name, %cluster, %error, "source did not sync")
                }
            }
        });
        Ok(())
    }
}
