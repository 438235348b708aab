//! [`Coordinator`]: which replica works on which cluster (multicluster-runtime's
//! `pkg/manager/coordinator/sharded`, with its Lease names and labels so the two can
//! be compared side by side).
//!
//! Each replica holds a peer Lease `<peer_prefix>-<identity>` (labels
//! `app.kubernetes.io/part-of: multicluster-runtime`, `mcr.sigs.k8s.io/peer: "true"`,
//! `mcr.sigs.k8s.io/prefix: <peer_prefix>`) and lists the others'; a peer's weight is
//! read from upstream's `mcr.sigs.k8s.io/weight` annotation (ctrl's replicas weigh 1). A cluster belongs to the live peer with the highest weighted
//! rendezvous hash of (peer, cluster); the owner takes the cluster's fence Lease
//! `<fence_prefix>-<cluster>` before it starts work there and renews it every tick,
//! so two replicas never work on one cluster even while their peer lists disagree.
//! A replica that stops gracefully releases its Leases; one that dies leaves them
//! to expire, and its clusters move once the fence's lease duration has passed
//! (client-go's rule: expiry as observed by the taker's clock).
//!
//! Unlike upstream, ownership is enforced where the cluster is handed out too:
//! [`Manager::cluster`] on a non-owner is [`super::Error::NotOwner`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::ListParams;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{ClusterName, Error, Manager, Ownership};
use crate::error::BoxError;
use crate::leaderelection::{ElectorConfig, LeaderElector, LeaseLock};
use crate::manager::{self, Runnable};

const LABEL_PART_OF: &str = "app.kubernetes.io/part-of";
const LABEL_PEER: &str = "mcr.sigs.k8s.io/peer";
const LABEL_PREFIX: &str = "mcr.sigs.k8s.io/prefix";
const ANNOTATION_WEIGHT: &str = "mcr.sigs.k8s.io/weight";
const PART_OF: &str = "multicluster-runtime";

/// The coordinator's knobs (upstream's `sharded.Config`), upstream's defaults.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    /// Where peer and fence Leases live. Default `kube-system`.
    pub namespace: String,
    /// Fence Lease names are `<fence_prefix>-<cluster>`. Default `mcr-shard`.
    pub fence_prefix: String,
    /// Peer Lease names are `<peer_prefix>-<identity>`. Default `mcr-peer`.
    pub peer_prefix: String,
    /// This replica's identity (a DNS-1123 name). Default: the host name and a
    /// random suffix, so that two replicas on one host differ.
    pub identity: String,
    /// The fence Leases' duration: how long a dead replica's clusters wait. Default 20s.
    pub lease_duration: Duration,
    /// The peer Leases' duration: how long a dead replica counts as a peer. Default 20s,
    /// the fence's (upstream: 30s), so that a dead replica's clusters move within one
    /// lease duration.
    pub peer_ttl: Duration,
    /// How often the coordinator renews its Leases and decides again. Default 5s.
    pub probe: Duration,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            namespace: "kube-system".into(),
            fence_prefix: "mcr-shard".into(),
            peer_prefix: "mcr-peer".into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(20),
            peer_ttl: Duration::from_secs(20),
            probe: Duration::from_secs(5),
        }
    }
}

fn default_identity() -> String {
    let host = crate::recorder::hostname().unwrap_or_else(|| "unknown".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    dns1123(&format!("{host}-{}", &suffix[..5]))
}

/// `s` as a DNS-1123 name: lower case, `[a-z0-9-.]`, alphanumeric at both ends
/// (upstream's `sanitize.DNS1123`).
pub fn dns1123(s: &str) -> String {
    let mapped: String = s
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let mut out: String = trimmed.chars().take(253).collect();
    if out.is_empty() {
        out.push('x');
    }
    out
}

/// A live peer: identity and weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The peer's identity.
    pub id: String,
    /// Its weight (at least 1).
    pub weight: u32,
}

/// The peer of `peers` that owns `cluster`: the highest weighted rendezvous score,
/// ties to the smaller identity (highest random weight hashing, upstream's `HRW`).
pub fn rendezvous_owner<'a>(cluster: &str, peers: &'a [Peer]) -> Option<&'a Peer> {
    let score = |p: &Peer| {
        let key = format!("{}/{cluster}", p.id);
        let h = xxhash_rust::xxh64::xxh64(key.as_bytes(), 0);
        let u = (h as f64 + 1.0) / (u64::MAX as f64 + 2.0);
        f64::from(p.weight.max(1)) / -u.ln()
    };
    peers
        .iter()
        .max_by(|a, b| score(a).total_cmp(&score(b)).then_with(|| b.id.cmp(&a.id)))
}

/// Decides which engaged clusters this replica works on; see the module docs. Build
/// the manager with [`Coordinator::manager`].
pub struct Coordinator {
    client: kube::Client,
    cfg: CoordinatorConfig,
    peers: Mutex<Vec<Peer>>,
    kick: Notify,
}

impl Ownership for Coordinator {
    fn owner(&self, cluster: &ClusterName) -> String {
        let peers = self.peers.lock();
        rendezvous_owner(cluster.as_str(), &peers)
            .map(|p| p.id.clone())
            .unwrap_or_default()
    }
    fn changed(&self) {
        self.kick.notify_one();
    }
}

impl Coordinator {
    /// A multi-cluster manager over `local` whose clusters are shared out between the
    /// replicas by a coordinator writing its Leases through `local`'s client.
    pub fn manager(local: manager::Manager, cfg: CoordinatorConfig) -> Result<Manager, Error> {
        let probe = cfg.probe;
        let shortest = cfg.lease_duration.min(cfg.peer_ttl);
        if probe.is_zero() || shortest <= probe.mul_f64(2.5) {
            return Err(Error::Coordinator(format!(
                "lease duration and peer ttl ({shortest:?}) must exceed 2.5 probes of {probe:?}"
            )));
        }
        let coordinator = Arc::new(Self {
            client: local.kube_client(),
            cfg,
            peers: Mutex::new(Vec::new()),
            kick: Notify::new(),
        });
        tracing::info!(identity = %coordinator.cfg.identity, namespace = %coordinator.cfg.namespace, "Starting replica: multi-cluster coordinator identity");
        let mgr = Manager::with_ownership(local.clone(), coordinator.clone());
        local.add(CoordinatorRunnable {
            coordinator,
            mgr: mgr.clone(),
        })?;
        Ok(mgr)
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.cfg.identity
    }

    fn elector(
        &self,
        name: String,
        labels: BTreeMap<String, String>,
        lease_duration: Duration,
    ) -> LeaderElector {
        let timeout = self.cfg.probe.max(Duration::from_secs(1));
        let lock = LeaseLock::new(
            self.client.clone(),
            &self.cfg.namespace,
            name.clone(),
            &self.cfg.identity,
            timeout,
        )
        .with_labels(labels);
        let cfg = ElectorConfig {
            lease_duration,
            renew_deadline: lease_duration / 2,
            retry_period: self.cfg.probe,
            release_on_cancel: true,
            name,
        };
        LeaderElector::new_boxed(Box::new(lock), cfg).expect("a lock with timings")
    }

    /// The live peers: labelled peer Leases with a holder, renewed within their
    /// duration (by the API server's clock as written), plus this replica.
    async fn list_peers(&self) -> Result<Vec<Peer>, kube::Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.cfg.namespace);
        let selector = format!("{LABEL_PEER}=true,{LABEL_PREFIX}={}", self.cfg.peer_prefix);
        let leases = api.list(&ListParams::default().labels(&selector)).await?;
        let now = Timestamp::now();
        let mut peers: Vec<Peer> = leases
            .items
            .iter()
            .filter_map(|l| live_peer(l, now))
            .collect();
        if !peers.iter().any(|p| p.id == self.cfg.identity) {
            peers.push(Peer {
                id: self.cfg.identity.clone(),
                weight: 1,
            });
        }
        peers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(peers)
    }
}

/// The peer a Lease stands for, if it is held and not expired at `now`.
fn live_peer(lease: &Lease, now: Timestamp) -> Option<Peer> {
    let spec = lease.spec.as_ref()?;
    let id = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
    let renewed = spec.renew_time.as_ref()?.0;
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds?));
    if renewed.checked_add(duration).ok()? < now {
        return None;
    }
    let weight = lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_WEIGHT))
        .and_then(|w| w.parse::<u32>().ok())
        .filter(|w| *w > 0)
        .unwrap_or(1);
    Some(Peer { id, weight })
}

/// The coordinator's loop as a runnable of the local manager.
struct CoordinatorRunnable {
    coordinator: Arc<Coordinator>,
    mgr: Manager,
}

/// What the loop keeps between ticks.
struct Tick {
    peer: LeaderElector,
    fences: HashMap<ClusterName, LeaderElector>,
}

impl CoordinatorRunnable {
    /// Renews this replica's peer Lease, refreshes the peer list, then starts, renews
    /// or stops the work on each engaged cluster.
    async fn tick(&self, st: &mut Tick) {
        let c = &self.coordinator;
        if !st.peer.try_acquire_or_renew().await {
            tracing::warn!(identity = %c.cfg.identity, "renewing the peer Lease failed");
        }
        match c.list_peers().await {
            Ok(peers) => *c.peers.lock() = peers,
            Err(error) => tracing::warn!(%error, "listing peer Leases failed"),
        }
        let engaged = self.mgr.work_state();
        for (name, working) in &engaged {
            let should = c.owner(name) == c.cfg.identity;
            self.decide(st, name, *working, should).await;
        }
        let gone: Vec<ClusterName> = st
            .fences
            .keys()
            .filter(|n| !engaged.iter().any(|(e, _)| e == *n))
            .cloned()
            .collect();
        for name in gone {
            if let Some(mut fence) = st.fences.remove(&name) {
                fence.release().await;
            }
        }
    }

    /// One cluster: take or renew its fence where this replica should own it, and
    /// start or keep the work only while the fence is held; elsewhere stop the work
    /// first, then release the fence.
    async fn decide(&self, st: &mut Tick, name: &ClusterName, working: bool, should: bool) {
        let c = &self.coordinator;
        if should {
            let fence = st.fences.entry(name.clone()).or_insert_with(|| {
                let lease = format!("{}-{}", c.cfg.fence_prefix, dns1123(name.as_str()));
                c.elector(lease, BTreeMap::new(), c.cfg.lease_duration)
            });
            if fence.try_acquire_or_renew().await {
                if !working && self.mgr.start_work(name) {
                    tracing::info!(cluster = %name, peer = %c.cfg.identity, "synchronization start");
                }
            } else if working {
                self.mgr.stop_work(name);
                tracing::info!(cluster = %name, peer = %c.cfg.identity, "lease lost; stopping");
            }
        } else {
            if working {
                self.mgr.stop_work(name);
                self.mgr.wait_idle(name).await;
                tracing::info!(cluster = %name, peer = %c.cfg.identity, "synchronization stop");
            }
            if let Some(mut fence) = st.fences.remove(name) {
                fence.release().await;
            }
        }
    }
}

#[async_trait]
impl Runnable for CoordinatorRunnable {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        let c = &self.coordinator;
        let labels = BTreeMap::from([
            (LABEL_PART_OF.to_string(), PART_OF.to_string()),
            (LABEL_PEER.to_string(), "true".to_string()),
            (LABEL_PREFIX.to_string(), c.cfg.peer_prefix.clone()),
        ]);
        let name = format!("{}-{}", c.cfg.peer_prefix, c.cfg.identity);
        let peer = c.elector(name, labels, c.cfg.peer_ttl);
        let mut st = Tick {
            peer,
            fences: HashMap::new(),
        };
        loop {
            self.tick(&mut st).await;
            tokio::select! {
                _ = ctx.cancelled() => break,
                _ = c.kick.notified() => {}
                _ = tokio::time::sleep(c.cfg.probe) => {}
            }
        }
        for (name, _) in self.mgr.work_state() {
            self.mgr.stop_work(&name);
            self.mgr.wait_idle(&name).await;
        }
        for (_, mut fence) in st.fences.drain() {
            fence.release().await;
        }
        st.peer.release().await;
        Ok(())
    }
    fn need_leader_election(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "multicluster-coordinator".into()
    }
}
