//! The multi-cluster [`Manager`] (multicluster-runtime's `mcmanager.Manager`): the
//! local manager plus the set of engaged clusters, and [`Aware`], what is told of
//! each cluster engaged.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use prometheus::IntGauge;

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
    /// The local manager refused to run a provider.
    #[error(transparent)]
    Manager(#[from] manager::Error),
}

/// Something that works on every engaged cluster (multicluster-runtime's
/// `multicluster.Aware`): a controller's per-cluster sources, your own runnable.
pub trait Aware: Send + Sync + 'static {
    /// Starts work on `cluster`, to stop when [`Cluster::token`] is cancelled. Must
    /// not block (spawn what takes time) and must accept the same cluster twice.
    fn engage(&self, cluster: &Cluster) -> Result<(), BoxError>;
}

/// Decides whether this replica may work on a cluster (the sharded coordinator's
/// view, see [`Manager::with_ownership`]): `Err(owner)` names the replica that may.
pub trait Ownership: Send + Sync + 'static {
    /// `Ok` if this replica owns `cluster`, else who does (possibly `""`: nobody yet).
    fn check(&self, cluster: &ClusterName) -> Result<(), String>;
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

#[derive(Default)]
struct State {
    clusters: BTreeMap<ClusterName, Cluster>,
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

    /// A manager whose clusters are handed out only where `ownership` says this
    /// replica owns them: [`Manager::cluster`] fails with [`Error::NotOwner`]
    /// elsewhere, and the cluster reconciler drops the requests of clusters it
    /// does not own.
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
    /// starts its cache, and tells every [`Aware`] (Go's `Engage`). Fails if a cluster
    /// of that name is engaged.
    pub fn engage(&self, cluster: Cluster) -> Result<(), Error> {
        let name = cluster.name().clone();
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
        st.clusters.insert(name.clone(), cluster.clone());
        cluster.run();
        for aware in &st.aware {
            if let Err(error) = aware.engage(&cluster) {
                tracing::error!(cluster = %name, %error, "engaging a component failed");
            }
        }
        ENGAGED.inc();
        tracing::info!(cluster = %name, local = cluster.is_local(), "Engaged cluster");
        Ok(())
    }

    /// Disengages the cluster `name`: removes it, so that [`Manager::cluster`] fails
    /// and no reconcile of it starts from now on, then cancels its token, which stops
    /// its cache, informers and sources. Returns whether it was engaged.
    pub fn disengage(&self, name: &ClusterName) -> bool {
        let Some(cluster) = self.inner.state.lock().clusters.remove(name) else {
            return false;
        };
        cluster.token().cancel();
        ENGAGED.dec();
        tracing::info!(cluster = %name, "Disengaged cluster");
        true
    }

    /// Disengages every cluster (the manager is stopping).
    pub fn disengage_all(&self) {
        for name in self.clusters() {
            self.disengage(&name);
        }
    }

    /// The engaged cluster `name` (Go's `GetCluster`), if this replica owns it.
    pub fn cluster(&self, name: &ClusterName) -> Result<Cluster, Error> {
        let cluster = self.engaged(name)?;
        if let Some(ownership) = &self.inner.ownership
            && let Err(owner) = ownership.check(name)
        {
            return Err(Error::NotOwner {
                cluster: name.clone(),
                owner,
            });
        }
        Ok(cluster)
    }

    /// The engaged cluster `name`, whoever owns it.
    fn engaged(&self, name: &ClusterName) -> Result<Cluster, Error> {
        self.inner
            .state
            .lock()
            .clusters
            .get(name)
            .cloned()
            .ok_or_else(|| Error::ClusterNotFound(name.clone()))
    }

    /// The names of the engaged clusters, in order.
    pub fn clusters(&self) -> Vec<ClusterName> {
        self.inner.state.lock().clusters.keys().cloned().collect()
    }

    /// Registers `aware` and engages it on every cluster engaged now; it is told of
    /// every cluster engaged later.
    pub fn add_aware(&self, aware: Arc<dyn Aware>) {
        let mut st = self.inner.state.lock();
        for cluster in st.clusters.values() {
            if let Err(error) = aware.engage(cluster) {
                tracing::error!(cluster = %cluster.name(), %error, "engaging a component failed");
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
        for cluster in st.clusters.values() {
            index(cluster).map_err(|source| Error::Index {
                cluster: cluster.name().clone(),
                source,
            })?;
        }
        st.indexes.push(index);
        Ok(())
    }

    /// Whether requests of `name` may be reconciled here: engaged and owned.
    pub(super) fn may_reconcile(&self, name: &ClusterName) -> bool {
        self.cluster(name).is_ok()
    }
}
