//! The shard side (upstream's `pkg/shard`): who this replica is in a ring, which
//! objects its caches hold, and the drain acknowledgement.
//!
//! A [`Shard`] is a ring name, an identity and the namespace of its lease. It gives the
//! cache options selecting only its objects ([`Shard::select`]), its lease
//! ([`Shard::lease`], a `super::lease::ShardLease` the manager runs before the
//! controllers), and [`ShardedReconciler`], which `ctrl-builder`'s
//! `ControllerBuilder::sharded` wraps around a controller's reconciler:
//!
//! - an object whose shard label names another shard is skipped (the cache may lag);
//! - an object carrying the drain label is let go: both labels are removed in one
//!   patch guarded by the object's `resourceVersion` ([`acknowledge_drain`]), and the
//!   reconciler never sees that version of it again — the sharder's webhook then
//!   assigns it to its new shard;
//! - every other object is passed on.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{ShardLease, label_drain, label_shard, metrics};
use crate::cache::{self, Cache, CacheObject, Reader};
use crate::leaderelection::{self, ElectorConfig};
use crate::reconcile::{Action, Error, Reconciler, Request};

/// One replica's place in a ring (upstream's shard identity plus ring name).
#[derive(Clone, Debug)]
pub struct Shard {
    ring: String,
    id: String,
    namespace: String,
    lease: ElectorConfig,
}

impl Shard {
    /// Shard `id` of `ring`, its lease in `namespace`, with controller-runtime's default
    /// lease timings (15 s / 10 s / 2 s), released on a graceful stop.
    pub fn new(
        ring: impl Into<String>,
        id: impl Into<String>,
        namespace: impl Into<String>,
    ) -> Self {
        Self {
            ring: ring.into(),
            id: id.into(),
            namespace: namespace.into(),
            lease: ElectorConfig {
                lease_duration: leaderelection::DEFAULT_LEASE_DURATION,
                renew_deadline: leaderelection::DEFAULT_RENEW_DEADLINE,
                retry_period: leaderelection::DEFAULT_RETRY_PERIOD,
                release_on_cancel: true,
                name: String::new(),
            },
        }
    }

    /// Other lease timings (and whether a graceful stop releases the lease; with
    /// `release_on_cancel` off a stop looks like a crash to the sharder).
    pub fn with_lease_config(mut self, cfg: ElectorConfig) -> Self {
        self.lease = cfg;
        self
    }

    /// The ring's name.
    pub fn ring(&self) -> &str {
        &self.ring
    }

    /// This shard's identity: its lease's name and holder, the value of its objects'
    /// shard label.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The namespace of the shard's lease.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The label selector of this shard's objects: `shard.alpha.sharding.timebertt.dev/<ring>=<id>`.
    pub fn label_selector(&self) -> String {
        format!("{}={}", label_shard(&self.ring), self.id)
    }

    /// `opts` with the cache of `K` restricted to this shard's objects (keeping any
    /// other per-type settings). Use it for the `For` and `Owns` types of sharded
    /// controllers when building the manager.
    pub fn select<K: Resource<DynamicType = ()>>(
        &self,
        mut opts: cache::Options,
    ) -> cache::Options {
        let key = cache::type_key::<K>(&());
        let by = opts.by_object.remove(&key).unwrap_or_default();
        opts.by_object
            .insert(key, by.label_selector(self.label_selector()));
        opts
    }

    /// The shard's lease runnable; add it to the manager.
    pub fn lease(&self, client: kube::Client) -> Result<ShardLease, leaderelection::Error> {
        ShardLease::new(
            client,
            &self.ring,
            &self.namespace,
            &self.id,
            self.lease.clone(),
        )
    }

    /// Whether `labels` assign the object to this shard.
    pub fn owns(&self, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        labels
            .and_then(|l| l.get(&label_shard(&self.ring)))
            .is_some_and(|s| *s == self.id)
    }

    /// Whether `labels` ask this shard to let the object go.
    pub fn is_draining(&self, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        labels.is_some_and(|l| l.contains_key(&label_drain(&self.ring)))
    }
}

/// Removes the shard and drain labels of `ring` from the object `ar` `namespace/name`,
/// only if it is still at `resource_version` (a 409 means it changed: the next event
/// decides again). The sharder's webhook then assigns it to its new shard.
pub async fn acknowledge_drain(
    client: kube::Client,
    ar: &ApiResource,
    ring: &str,
    namespace: &str,
    name: &str,
    resource_version: &str,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = if namespace.is_empty() {
        Api::all_with(client, ar)
    } else {
        Api::namespaced_with(client, namespace, ar)
    };
    let patch = json!({ "metadata": {
        "resourceVersion": resource_version,
        "labels": { label_shard(ring): null, label_drain(ring): null },
    }});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Whether resourceVersion `rv` is not newer than `at` (numeric where both are, as
/// etcd's and ctrl-envtest's are; otherwise only equality is known).
fn not_newer(rv: &str, at: &str) -> bool {
    match (rv.parse::<u64>(), at.parse::<u64>()) {
        (Ok(rv), Ok(at)) => rv <= at,
        _ => rv == at,
    }
}

/// A reconciler for the objects of `K` assigned to one shard; see the module docs.
pub struct ShardedReconciler<K> {
    inner: Arc<dyn Reconciler>,
    cache: Cache,
    shard: Shard,
    ar: ApiResource,
    /// Object UID -> the resourceVersion this shard drained it at: that version (or an
    /// older one a lagging cache still shows) is never reconciled.
    drained: Mutex<HashMap<String, String>>,
    _k: PhantomData<fn(K)>,
}

impl<K: CacheObject<DynamicType = ()>> ShardedReconciler<K> {
    /// Wraps `inner`, reading `K` from `cache`.
    pub fn new(shard: Shard, cache: Cache, inner: Arc<dyn Reconciler>) -> Self {
        Self {
            inner,
            cache,
            shard,
            ar: ApiResource::erase::<K>(&()),
            drained: Mutex::new(HashMap::new()),
            _k: PhantomData,
        }
    }

    /// [`ShardedReconciler::new`], boxed.
    pub fn boxed(shard: Shard, cache: Cache, inner: Arc<dyn Reconciler>) -> Arc<dyn Reconciler> {
        Arc::new(Self::new(shard, cache, inner))
    }

    fn was_drained(&self, uid: &str, rv: &str) -> bool {
        let mut drained = self.drained.lock();
        match drained.get(uid) {
            Some(at) if not_newer(rv, at) => true,
            Some(_) => {
                drained.remove(uid);
                false
            }
            None => false,
        }
    }

    async fn drain(&self, req: &Request, uid: String, rv: String) -> Result<Action, Error> {
        let client = self.cache.kube_client().clone();
        let (ring, id) = (self.shard.ring(), self.shard.id());
        match acknowledge_drain(client, &self.ar, ring, &req.namespace, &req.name, &rv).await {
            Ok(()) => {
                self.drained.lock().insert(uid, rv);
                metrics::DRAIN_ACKS.with_label_values(&[ring, id]).inc();
                tracing::info!(namespace = %req.namespace, name = %req.name, shard = %id, ring = %ring, "Acknowledged drain");
                Ok(Action::done())
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(Action::done()),
            Err(e) => Err(Error::new(e)),
        }
    }
}

#[async_trait]
impl<K: CacheObject<DynamicType = ()>> Reconciler for ShardedReconciler<K> {
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        let obj = match self.cache.get::<K>(&req.namespace, &req.name).await {
            Ok(obj) => obj,
            Err(e) if e.is_not_found() => return Ok(Action::done()),
            Err(e) => return Err(Error::new(e)),
        };
        let meta = obj.meta();
        let labels = meta.labels.as_ref();
        if !self.shard.owns(labels) {
            return Ok(Action::done());
        }
        let uid = meta.uid.clone().unwrap_or_default();
        let rv = meta.resource_version.clone().unwrap_or_default();
        if self.was_drained(&uid, &rv) {
            return Ok(Action::done());
        }
        if self.shard.is_draining(labels) {
            return self.drain(&req, uid, rv).await;
        }
        self.inner.reconcile(ctx, req).await
    }
}
