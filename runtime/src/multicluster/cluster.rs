//! [`Cluster`]: one member cluster's client, cache, API reader and Events recorder,
//! run on its own token (controller-runtime's `pkg/cluster`, as multicluster-runtime
//! engages it).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ClusterName;
use crate::cache::{self, Cache};
use crate::client::{ApiReader, Client};
use crate::recorder;

/// How long a disengaged cluster's recorder may take to flush its queued Events.
const RECORDER_FLUSH: Duration = Duration::from_secs(5);

/// One cluster an operator works on (Go's `cluster.Cluster`): a client that reads
/// from the cluster's own cache and writes to its API server, an uncached reader, an
/// Events recorder, and the token the cluster runs on. Cheap to clone.
///
/// The cache starts when the cluster is engaged on a [`Manager`](super::Manager) and
/// stops, with every informer and source of the cluster, when it is disengaged (the
/// token is cancelled).
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    name: ClusterName,
    kube: kube::Client,
    client: Client,
    recorder: recorder::Provider,
    token: CancellationToken,
    local: bool,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.inner.name)
            .field("local", &self.inner.local)
            .field("engaged", &!self.inner.token.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A cluster named `name` reached through `kube`, its cache built with `opts`.
    /// Nothing runs until it is engaged.
    pub fn new(name: impl Into<ClusterName>, kube: kube::Client, opts: cache::Options) -> Self {
        Self::build(name.into(), kube, opts, false)
    }

    /// The cluster the operator runs in, named `name` (what
    /// [`LocalProvider`](super::LocalProvider) engages); shares `mgr`'s cache, so
    /// the manager runs the cache and disengaging does not stop it.
    pub(super) fn local(name: ClusterName, mgr: &crate::manager::Manager) -> Self {
        Self {
            inner: Arc::new(Inner {
                name,
                kube: mgr.kube_client(),
                client: mgr.client(),
                recorder: recorder::Provider::new(mgr.kube_client()),
                token: CancellationToken::new(),
                local: true,
            }),
        }
    }

    fn build(name: ClusterName, kube: kube::Client, opts: cache::Options, local: bool) -> Self {
        let cache = Cache::new(kube.clone(), opts);
        Self {
            inner: Arc::new(Inner {
                name,
                client: Client::new(kube.clone(), cache),
                recorder: recorder::Provider::new(kube.clone()),
                kube,
                token: CancellationToken::new(),
                local,
            }),
        }
    }

    /// The cluster's name.
    pub fn name(&self) -> &ClusterName {
        &self.inner.name
    }

    /// Whether this is the operator's own cluster ([`LocalProvider`](super::LocalProvider)).
    pub fn is_local(&self) -> bool {
        self.inner.local
    }

    /// The client: reads from this cluster's cache, writes to its API server.
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// This cluster's cache.
    pub fn cache(&self) -> Cache {
        self.inner.client.cache().clone()
    }

    /// A reader that goes straight to this cluster's API server (Go's `GetAPIReader`).
    pub fn api_reader(&self) -> ApiReader {
        self.inner.client.api_reader()
    }

    /// The uncached kube client of this cluster.
    pub fn kube_client(&self) -> kube::Client {
        self.inner.kube.clone()
    }

    /// An Events recorder writing to this cluster, naming `name` as the reporting
    /// controller (Go's `GetEventRecorderFor`).
    pub fn event_recorder(&self, name: impl Into<String>) -> recorder::Recorder {
        self.inner.recorder.event_recorder(name)
    }

    /// The token the cluster runs on: cancelled when it is disengaged.
    pub fn token(&self) -> CancellationToken {
        self.inner.token.clone()
    }

    /// Whether the cluster has been disengaged (its token cancelled).
    pub fn is_disengaged(&self) -> bool {
        self.inner.token.is_cancelled()
    }

    /// Starts the cache (a remote cluster's; the local one runs under the manager)
    /// until the token is cancelled, then flushes the recorder.
    pub(super) fn run(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            let token = this.token();
            if !this.inner.local
                && let Err(error) = this.cache().start(token.clone()).await
            {
                tracing::error!(cluster = %this.inner.name, %error, "cluster cache failed");
            }
            token.cancelled().await;
            this.inner.recorder.stop(RECORDER_FLUSH).await;
        });
    }
}
