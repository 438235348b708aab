//! [`MultiClusterBuilder`]: a controller over every engaged cluster
//! (multicluster-runtime's `pkg/builder`: `mcbuilder.ControllerManagedBy(mgr)` with
//! its `EngageOptions`).
//!
//! Each `for_` / `owns` / `watches` becomes one [`ClusterSource`]: on every cluster
//! the [`multicluster::Manager`] engages (and the filter accepts) it starts a
//! cache-backed `Kind` over that cluster's cache with an ordinary handler, and the
//! requests it makes carry the cluster ([`ClusterRequest`]). Owner references are
//! followed within each cluster, as objects never own objects of another cluster.
//! The reconciler runs behind [`ClusterReconciler`], so requests of clusters that
//! left end without a reconcile. Like [`ControllerBuilder`](crate::ControllerBuilder)
//! the methods only record; `complete` wires and registers the controller.

use std::sync::Arc;

use ctrl_runtime::cache::CacheObject;
use ctrl_runtime::controller::{self, Controller};
use ctrl_runtime::handler::{EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler};
use ctrl_runtime::multicluster::{
    self, Cluster, ClusterFilter, ClusterReconciler, ClusterRequest, ClusterSource,
};
use ctrl_runtime::reconcile::{Reconciler, Request};
use ctrl_runtime::source::{BoxSource, Kind};

use crate::error::Error;

type Factory = Arc<dyn Fn(&Cluster) -> BoxSource<Request> + Send + Sync>;
type OwnerFor = fn() -> EnqueueRequestForOwner;

/// Builds a controller of [`ClusterRequest`]s over the clusters of a
/// [`multicluster::Manager`] and registers it with the local manager.
///
/// ```no_run
/// # fn demo(mgr: ctrl_runtime::multicluster::Manager) -> Result<(), ctrl_builder::Error> {
/// use ctrl_builder::MultiClusterBuilder;
/// use ctrl_runtime::multicluster::ClusterRequest;
/// use ctrl_runtime::reconcile::{self, Action};
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
///
/// MultiClusterBuilder::new(&mgr)
///     .for_::<ConfigMap>()
///     .owns::<Secret>()
///     .complete(reconcile::typed_func(|_ctx, req: ClusterRequest| async move {
///         tracing::info!(%req, "reconciling");
///         Ok(Action::done())
///     }))?;
/// # Ok(()) }
/// ```
pub struct MultiClusterBuilder {
    mgr: multicluster::Manager,
    name: Option<String>,
    for_kind: Option<(String, OwnerFor)>,
    sources: Vec<(String, Factory)>,
    owns_without_for: bool,
    local: bool,
    filter: Option<ClusterFilter>,
    options: controller::Options<ClusterRequest>,
    cluster_metrics: bool,
}

fn owner_of<K>() -> EnqueueRequestForOwner
where
    K: kube::Resource<DynamicType = ()>,
    K::Scope: 'static,
{
    EnqueueRequestForOwner::new::<K>().only_controller_owner()
}

impl MultiClusterBuilder {
    /// A builder for a controller `mgr`'s local manager will run. By default it works on
    /// every engaged cluster but the local one ([`Self::with_local_cluster`]).
    pub fn new(mgr: &multicluster::Manager) -> Self {
        Self {
            mgr: mgr.clone(),
            name: None,
            for_kind: None,
            sources: Vec::new(),
            owns_without_for: false,
            local: false,
            filter: None,
            options: controller::Options::default(),
            cluster_metrics: false,
        }
    }

    fn source<K>(mut self, handler: impl EventHandler<K, Request> + Clone) -> Self
    where
        K: CacheObject<DynamicType = ()>,
    {
        let factory: Factory = Arc::new(move |cluster: &Cluster| {
            Arc::new(Kind::<K, Request>::new(&cluster.cache(), handler.clone()))
                as BoxSource<Request>
        });
        self.sources.push((K::kind(&()).to_lowercase(), factory));
        self
    }

    /// Reconciles objects of `K` in every cluster: each event enqueues the object's
    /// own request in its cluster (Go's `For`).
    pub fn for_<K>(mut self) -> Self
    where
        K: CacheObject<DynamicType = ()>,
        K::Scope: 'static,
    {
        self.for_kind = Some((K::kind(&()).to_lowercase(), owner_of::<K>));
        self.source::<K>(EnqueueRequestForObject)
    }

    /// Also reconciles the `For` object that controls an `O` of the same cluster
    /// (Go's `Owns`).
    pub fn owns<O>(self) -> Self
    where
        O: CacheObject<DynamicType = ()>,
    {
        match &self.for_kind {
            Some((_, owner)) => {
                let handler = owner();
                self.source::<O>(handler)
            }
            None => Self {
                owns_without_for: true,
                ..self
            },
        }
    }

    /// Enqueues what `handler` maps events of `W` to, in the event's cluster (Go's
    /// `Watches`).
    pub fn watches<W>(self, handler: impl EventHandler<W, Request> + Clone) -> Self
    where
        W: CacheObject<DynamicType = ()>,
    {
        self.source::<W>(handler)
    }

    /// Adds the source `factory` builds for each engaged cluster, named `name` in logs
    /// (the per-cluster form of Go's `WatchesRawSource`): e.g. a `Kind` over the hub's
    /// cache, whose requests then name each member in turn.
    pub fn watches_per_cluster(
        mut self,
        name: impl Into<String>,
        factory: impl Fn(&Cluster) -> BoxSource<Request> + Send + Sync + 'static,
    ) -> Self {
        self.sources.push((name.into(), Arc::new(factory)));
        self
    }

    /// Whether the local cluster (the one [`multicluster::LocalProvider`] engages)
    /// is reconciled too (Go's `WithEngageWithLocalCluster`). Default false.
    pub fn with_local_cluster(mut self, on: bool) -> Self {
        self.local = on;
        self
    }

    /// Only clusters for which `filter` is true (checked when each is engaged).
    pub fn with_cluster_filter(
        mut self,
        filter: impl Fn(&Cluster) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// Sets the controller's options (Go's `WithOptions`). Unless they name a queue
    /// (`new_queue`) or turn the priority queue off, the queue is
    /// [`multicluster::fair_queue`]: fair across (cluster, namespace).
    pub fn with_options(mut self, options: controller::Options<ClusterRequest>) -> Self {
        self.options = options;
        self
    }

    /// Counts reconciles per cluster in `multicluster_reconcile_total{cluster, result}`
    /// (off by default: one series per cluster).
    pub fn with_cluster_metrics(mut self, on: bool) -> Self {
        self.cluster_metrics = on;
        self
    }

    /// Names the controller (Go's `Named`); default: the `For` kind, lower case.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the controller and adds it to the local manager (Go's `Complete`).
    pub fn complete(
        self,
        reconciler: impl Reconciler<ClusterRequest>,
    ) -> Result<Controller<ClusterRequest>, Error> {
        if self.owns_without_for {
            return Err(Error::OwnsWithoutFor);
        }
        if self.sources.is_empty() {
            return Err(Error::NoWatches);
        }
        let name = match (self.name, &self.for_kind) {
            (Some(n), _) => n,
            (None, Some((kind, _))) => kind.clone(),
            (None, None) => return Err(Error::MissingName),
        };
        let filter = cluster_filter(self.local, self.filter);
        let sources: Vec<BoxSource<ClusterRequest>> = self
            .sources
            .into_iter()
            .map(|(kind, factory)| {
                let src =
                    ClusterSource::new(&self.mgr, kind, factory).with_filter(Some(filter.clone()));
                Arc::new(src) as BoxSource<ClusterRequest>
            })
            .collect();
        let mut reconciler = ClusterReconciler::new(&self.mgr, reconciler);
        if self.cluster_metrics {
            reconciler = reconciler.with_cluster_metrics();
        }
        let mut options = self.options;
        if options.new_queue.is_none() && options.uses_priority_queue() {
            options.new_queue = Some(multicluster::fair_queue());
        }
        let ctrl = Controller::with_sources(name, reconciler, options, sources)?;
        self.mgr.local().add(ctrl.clone())?;
        Ok(ctrl)
    }
}

/// The local cluster only if asked for, then the user's filter.
fn cluster_filter(local: bool, user: Option<ClusterFilter>) -> ClusterFilter {
    Arc::new(move |c: &Cluster| (local || !c.is_local()) && user.as_ref().is_none_or(|f| f(c)))
}
