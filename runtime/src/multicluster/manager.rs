//! The multi-cluster [`Manager`] (multicluster-runtime's `mcmanager.Manager`): the
//! local manager plus the set of engaged clusters, and [`Aware`], what is told of
//! each cluster engaged.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use prometheus::IntGauge;
use tokio_util::sync::CancellationToken;

use super::{Cluster, ClusterName};
use crate::cache::{self, CacheObject};
use crate::error::BoxError;
use crate::manager;

/// `multicluster_engaged_clusters`: clusters engaged right now, summed over the
/// managers of the process.
static ENGAGED: LazyLock<IntGauge> = LazyLock::new(|| {
    let g = IntGauge::new(
        "multicluster_engaged_clusters",
        "Number of clusters currently engaged by the multi-cluster manager",
    )
    .expect("valid metric");
    crate::metrics::registry()
        .register(Box::new(g.clone()))
        .ok();
    g
});

/// Why a multi-cluster call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No cluster of this name is engaged (Go's `multicluster.ErrClusterNotFound`).
    #[error("cluster {0} not found")]
    ClusterNotFound(ClusterName),
    /// A cluster of this name is engaged already.
    #[error("cluster {0} is already engaged")]
    AlreadyEngaged(ClusterName),
    /// The cluster is engaged but owned by another replica
    /// ([`Manager::with_ownership`]).
    #[error("cluster {cluster} is owned by another replica ({owner})")]
    NotOwner {
        /// The cluster asked for.
        cluster: ClusterName,
        /// The replica that owns it, as far as this one knows.
        owner: String,
    },
    /// Indexing a cluster's cache failed.
    #[error("indexing cluster {cluster}: {source}")]
    Index {
        /// The cluster whose cache refused the index.
        cluster: ClusterName,
        /// Why.
        source: cache::Error,
    },
    /// The coordinator's configuration is unusable.
    #[error("invalid coordinator configuration: {0}")]
    Coordinator(String),
    /// The local manager refused to run a provider.
    #[error(transparent)]
    Manager(#[from] manager::Error),
}

/// Something that works on every engaged cluster (multicluster-runtime's
/// `multicluster.Aware`): a controller's per-cluster sources, your own runnable.
pub trait Aware: Send + Sync + 'static {
    /// Starts work on `cluster`, to stop when `token` is cancelled: when the cluster
    /// is disengaged, or when this replica stops owning it. Must not block (spawn
    /// what takes time) and must accept the same cluster again after a stop.
    fn engage(&self, cluster: &Cluster, token: CancellationToken) -> Result<(), BoxError>;
}

/// Who decides which engaged clusters this replica works on (the sharded
/// coordinator, see [`Manager::with_ownership`]). It starts and stops the work on
/// each cluster with [`Manager::start_work`] and [`Manager::stop_work`].
pub trait Ownership: Send + Sync + 'static {
    /// The replica that should own `cluster`, as far as this one knows.
    fn owner(&self, cluster: &ClusterName) -> String;
    /// A cluster was engaged or disengaged: decide again soon.
    fn changed(&self);
}

type IndexFn = Arc<dyn Fn(&Cluster) -> Result<(), cache::Error> + Send + Sync>;

/// The local [`manager::Manager`] and the clusters engaged on it (multicluster-runtime's
/// `mcmanager.Manager`). Cheap to clone.
///
/// Providers ([`Manager::add_provider`]) call [`Manager::engage`] and
/// [`Manager::disengage`]; reconcilers call [`Manager::cluster`]; controllers built
/// over many clusters register their sources as [`Aware`].
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    local: manager::Manager,
    state: Mutex<State>,
    ownership: Option<Arc<dyn Ownership>>,
}

/// An engaged cluster and, while this replica works on it, the token its work runs
/// on (a child of the cluster's token).
struct Entry {
    cluster: Cluster,
    work: Option<CancellationToken>,
    /// Held shared by each reconcile of the cluster; taken exclusively by
    /// [`Manager::wait_idle`] to wait for those in flight.
    inflight: Arc<tokio::sync::RwLock<()>>,
}

#[derive(Default)]
struct State {
    clusters: BTreeMap<ClusterName, Entry>,
    aware: Vec<Arc<dyn Aware>>,
    indexes: Vec<IndexFn>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("clusters", &self.clusters())
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A multi-cluster manager over `local` (Go's `mcmanager.New`), with no clusters
    /// until a provider engages some.
    pub fn new(local: manager::Manager) -> Self {
        Self::build(local, None)
    }

    /// A manager that works on an engaged cluster only once `ownership` starts the
    /// work there ([`Manager::start_work`]): until then, and after
    /// [`Manager::stop_work`], no source runs on it, [`Manager::cluster`] fails with
    /// [`Error::NotOwner`], and the cluster reconciler drops its requests.
    pub fn with_ownership(local: manager::Manager, ownership: Arc<dyn Ownership>) -> Self {
        Self::build(local, Some(ownership))
    }

    fn build(local: manager::Manager, ownership: Option<Arc<dyn Ownership>>) -> Self {
        LazyLock::force(&ENGAGED);
        Self {
            inner: Arc::new(Inner {
                local,
                state: Mutex::new(State::default()),
                ownership,
            }),
        }
    }

    /// The local manager (Go's `GetLocalManager`): it runs the providers and the
    /// controllers.
    pub fn local(&self) -> &manager::Manager {
        &self.inner.local
    }

    /// Engages `cluster`: indexes its cache with every index registered so far,
    /// starts its cache and, unless an [`Ownership`] decides, starts the work of every
    /// [`Aware`] on it (Go's `Engage`). Fails if a cluster of that name is engaged.
    pub fn engage(&self, cluster: Cluster) -> Result<(), Error> {
        let name = cluster.name().clone();
        {
            let mut st = self.inner.state.lock();
            if st.clusters.contains_key(&name) {
                return Err(Error::AlreadyEngaged(name));
            }
            for index in &st.indexes {
                index(&cluster).map_err(|source| Error::Index {
                    cluster: name.clone(),
                    source,
                })?;
            }
            cluster.run();
            let entry = Entry {
                cluster: cluster.clone(),
                work: None,
                inflight: Arc::default(),
            };
            st.clusters.insert(name.clone(), entry);
        }
        ENGAGED.inc();
        tracing::info!(cluster = %name, local = cluster.is_local(), "Engaged cluster");
        match &self.inner.ownership {
            Some(ownership) => ownership.changed(),
            None => {
                self.start_work(&name);
            }
        }
        Ok(())
    }

    /// Starts the work of every [`Aware`] on the engaged cluster `name`, on a child of
    /// its token; false if it is not engaged or already worked on.
    pub fn start_work(&self, name: &ClusterName) -> bool {
        let mut st = self.inner.state.lock();
        let State {
            clusters, aware, ..
        } = &mut *st;
        let Some(entry) = clusters.get_mut(name).filter(|e| e.work.is_none()) else {
            return false;
        };
        let token = entry.cluster.token().child_token();
        for a in aware.iter() {
            if let Err(error) = a.engage(&entry.cluster, token.clone()) {
                tracing::error!(cluster = %name, %error, "engaging a component failed");
            }
        }
        entry.work = Some(token);
        tracing::info!(cluster = %name, "Started work on cluster");
        true
    }

    /// Stops the work on cluster `name` (its sources stop; its requests are dropped
    /// from now on), leaving it engaged; false if no work ran on it.
    pub fn stop_work(&self, name: &ClusterName) -> bool {
        let work = self
            .inner
            .state
            .lock()
            .clusters
            .get_mut(name)
            .and_then(|e| e.work.take());
        let Some(token) = work else { return false };
        token.cancel();
        tracing::info!(cluster = %name, "Stopped work on cluster");
        true
    }

    /// The engaged clusters and whether this replica works on each.
    pub fn work_state(&self) -> Vec<(ClusterName, bool)> {
        let st = self.inner.state.lock();
        st.clusters
            .iter()
            .map(|(n, e)| (n.clone(), e.work.is_some()))
            .collect()
    }

    /// Disengages the cluster `name`: removes it, so that [`Manager::cluster`] fails
    /// and no reconcile of it starts from now on, then cancels its token, which stops
    /// its cache, informers and sources. Returns whether it was engaged.
    pub fn disengage(&self, name: &ClusterName) -> bool {
        let Some(entry) = self.inner.state.lock().clusters.remove(name) else {
            return false;
        };
        entry.cluster.token().cancel();
        ENGAGED.dec();
        tracing::info!(cluster = %name, "Disengaged cluster");
        if let Some(ownership) = &self.inner.ownership {
            ownership.changed();
        }
        true
    }

    /// Disengages every cluster (the manager is stopping).
    pub fn disengage_all(&self) {
        for name in self.clusters() {
            self.disengage(&name);
        }
    }

    /// The engaged cluster `name` (Go's `GetCluster`), if this replica works on it:
    /// with an [`Ownership`], a cluster owned elsewhere is [`Error::NotOwner`] (the
    /// check multicluster-runtime's #172 asks for on this path).
    pub fn cluster(&self, name: &ClusterName) -> Result<Cluster, Error> {
        let (cluster, working) = {
            let st = self.inner.state.lock();
            let entry = st
                .clusters
                .get(name)
                .ok_or_else(|| Error::ClusterNotFound(name.clone()))?;
            (entry.cluster.clone(), entry.work.is_some())
        };
        match &self.inner.ownership {
            Some(ownership) if !working => Err(Error::NotOwner {
                cluster: name.clone(),
                owner: ownership.owner(name),
            }),
            _ => Ok(cluster),
        }
    }

    /// The names of the engaged clusters, in order.
    pub fn clusters(&self) -> Vec<ClusterName> {
        self.inner.state.lock().clusters.keys().cloned().collect()
    }

    /// Registers `aware` and engages it on every cluster engaged now; it is told of
    /// every cluster engaged later.
    pub fn add_aware(&self, aware: Arc<dyn Aware>) {
        let mut st = self.inner.state.lock();
        for entry in st.clusters.values() {
            let Some(token) = &entry.work else { continue };
            if let Err(error) = aware.engage(&entry.cluster, token.clone()) {
                tracing::error!(cluster = %entry.cluster.name(), %error, "engaging a component failed");
            }
        }
        st.aware.push(aware);
    }

    /// Adds a field index on `K` to every cluster's cache, engaged now or later
    /// (Go's `Provider.IndexField`).
    pub fn index_field<K>(
        &self,
        field: &str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error>
    where
        K: CacheObject<DynamicType = ()>,
    {
        let f = Arc::new(f);
        let field = field.to_string();
        let index: IndexFn = Arc::new(move |cluster: &Cluster| {
            let f = f.clone();
            cluster.cache().index_field::<K>(&field, move |o| f(o))
        });
        let mut st = self.inner.state.lock();
        for entry in st.clusters.values() {
            index(&entry.cluster).map_err(|source| Error::Index {
                cluster: entry.cluster.name().clone(),
                source,
            })?;
        }
        st.indexes.push(index);
        Ok(())
    }

    /// A guard to hold while reconciling a request of `name`, if this replica works
    /// on it now; `None` means drop the request.
    pub(super) async fn reconcile_guard(
        &self,
        name: &ClusterName,
    ) -> Option<tokio::sync::OwnedRwLockReadGuard<()>> {
        let lock = {
            let st = self.inner.state.lock();
            let entry = st.clusters.get(name).filter(|e| e.work.is_some())?;
            entry.inflight.clone()
        };
        let guard = lock.read_owned().await;
        // Work may have stopped while this waited for the lock.
        self.cluster(name).ok().map(|_| guard)
    }

    /// Waits until no reconcile of `name` is in flight (after [`Manager::stop_work`],
    /// before another replica may take the cluster over).
    pub async fn wait_idle(&self, name: &ClusterName) {
        let lock = {
            let st = self.inner.state.lock();
            let Some(entry) = st.clusters.get(name) else {
                return;
            };
            entry.inflight.clone()
        };
        drop(lock.write().await);
    }
}
