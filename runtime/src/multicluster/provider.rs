//! [`Provider`]: what discovers clusters and engages them (multicluster-runtime's
//! `multicluster.Provider`), how the local manager runs one (`ProviderRunnable`),
//! and the two simplest: [`StaticProvider`] and [`LocalProvider`].

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Cluster, ClusterName, Error, Manager};
use crate::cache;
use crate::error::BoxError;
use crate::manager::{Group, Runnable};

/// Discovers clusters and engages them on a [`Manager`] (multicluster-runtime's
/// `Provider.Start(ctx, aware)`): calls [`Manager::engage`] for each cluster found and
/// [`Manager::disengage`] for each one gone, until `ctx` is cancelled. Clusters are
/// looked up on the manager ([`Manager::cluster`]), and indexes are registered there
/// ([`Manager::index_field`]), so a provider only discovers.
///
/// Run one with [`Manager::add_provider`]: it runs in the local manager's caches group,
/// and controllers start once [`Provider::wait_ready`] says the first discovery is
/// done. When the manager stops, every cluster is disengaged.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Engages and disengages clusters until `ctx` is cancelled.
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError>;

    /// Resolves `true` once the clusters that exist at start are engaged, `false` if
    /// `ctx` is cancelled first. Default: at once.
    async fn wait_ready(&self, _ctx: CancellationToken) -> bool {
        true
    }

    /// A name for logs.
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_string()
    }
}

impl Manager {
    /// Runs `provider` on the local manager (in its caches group, so controllers start
    /// once the provider's first clusters are engaged).
    pub fn add_provider(&self, provider: impl Provider) -> Result<(), Error> {
        let runnable = ProviderRunnable::new(Arc::new(provider), self.clone());
        Ok(self.local().add(runnable)?)
    }
}

/// What a provider's [`Provider::wait_ready`] does with a flag it sets once its
/// first discovery is done: waits for it (true) or for `ctx` (false).
pub(super) async fn wait_ready(
    ready: &tokio::sync::watch::Sender<bool>,
    ctx: CancellationToken,
) -> bool {
    let mut ready = ready.subscribe();
    tokio::select! {
        r = ready.wait_for(|r| *r) => r.is_ok(),
        _ = ctx.cancelled() => false,
    }
}

/// A [`Provider`] as a [`Runnable`] of the local manager.
pub(super) struct ProviderRunnable {
    provider: Arc<dyn Provider>,
    mgr: Manager,
}

impl ProviderRunnable {
    pub(super) fn new(provider: Arc<dyn Provider>, mgr: Manager) -> Self {
        Self { provider, mgr }
    }
}

#[async_trait]
impl Runnable for ProviderRunnable {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        tracing::info!(provider = %self.provider.name(), "Starting cluster provider");
        let res = self.provider.run(ctx.clone(), self.mgr.clone()).await;
        if res.is_ok() {
            ctx.cancelled().await;
        }
        self.mgr.disengage_all();
        res
    }
    fn group(&self) -> Group {
        Group::Caches
    }
    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        self.provider.wait_ready(ctx).await
    }
    fn name(&self) -> String {
        self.provider.name()
    }
}

/// A fixed list of clusters, engaged at start (multicluster-runtime's `clusters`
/// provider, filled once).
pub struct StaticProvider {
    clusters: Vec<(ClusterName, kube::Client)>,
    cache: cache::Options,
}

impl StaticProvider {
    /// No clusters yet; add them with [`StaticProvider::with_cluster`].
    pub fn new() -> Self {
        Self {
            clusters: Vec::new(),
            cache: cache::Options::default(),
        }
    }

    /// Adds the cluster `name` reached through `client`.
    pub fn with_cluster(mut self, name: impl Into<ClusterName>, client: kube::Client) -> Self {
        self.clusters.push((name.into(), client));
        self
    }

    /// The cache options every cluster's cache is built with.
    pub fn with_cache_options(mut self, opts: cache::Options) -> Self {
        self.cache = opts;
        self
    }
}

impl Default for StaticProvider {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Provider for StaticProvider {
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError> {
        for (name, client) in &self.clusters {
            mgr.engage(Cluster::new(name, client.clone(), self.cache.clone()))?;
        }
        ctx.cancelled().await;
        Ok(())
    }
    fn name(&self) -> String {
        "static-provider".into()
    }
}

/// The operator's own cluster, engaged under a name like any other (the answer to
/// multicluster-runtime's #96): its client and cache are the local manager's.
pub struct LocalProvider {
    name: ClusterName,
}

impl LocalProvider {
    /// The local cluster, named `name`.
    pub fn new(name: impl Into<ClusterName>) -> Self {
        Self { name: name.into() }
    }
}

#[async_trait]
impl Provider for LocalProvider {
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError> {
        mgr.engage(Cluster::local(self.name.clone(), mgr.local()))?;
        ctx.cancelled().await;
        Ok(())
    }
    fn name(&self) -> String {
        "local-provider".into()
    }
}
