//! [`Lock`], what the elector (`elector`) locks on (client-go's
//! `resourcelock.Interface`), and [`LeaseLock`], the `coordination.k8s.io/v1` Lease
//! implementation every manager uses unless given its own ([`ResourceLock`], Go's
//! `Options.LeaderElectionResourceLockInterface`).
//!
//! It keeps the Lease it last read or wrote and sends every update with that
//! object's `resourceVersion`, so a write based on a stale read fails with 409 and
//! the elector (`elector`) simply tries again later. Each API call is bounded by the
//! lock's call timeout, as controller-runtime bounds the leader-election client.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::{Error, LeaderElectionRecord};

/// A leader-election lock: one record, read and written with optimistic
/// concurrency (client-go's `resourcelock.Interface`). Implement it to elect on
/// something other than a Lease; [`LeaseLock`] is the stock one.
#[async_trait]
pub trait Lock: Send + Sync + 'static {
    /// Reads the record: `Ok(None)` if the lock object does not exist.
    async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, Error>;
    /// Creates the lock object holding `rec`; returns the record as stored.
    async fn create(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error>;
    /// Writes `rec` over the object last read or written; must fail (with a
    /// conflict) if someone else wrote it since.
    async fn update(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error>;
    /// This candidate's identity (the record's `holderIdentity` while it leads).
    fn identity(&self) -> &str;
    /// The lock's name for logs (`namespace/name`).
    fn describe(&self) -> String;
    /// The Lease behind the lock, if it is one: the elector watches it to take over
    /// at once when it is released. Default none (the elector polls every retry
    /// period).
    fn lease(&self) -> Option<(Api<Lease>, String)> {
        None
    }
}

/// A custom [`Lock`] handed to the manager (Go's
/// `Options.LeaderElectionResourceLockInterface`). Cheap to clone; the first
/// manager built with it takes the lock, a second one is refused.
#[derive(Clone)]
pub struct ResourceLock(Arc<Mutex<Option<Box<dyn Lock>>>>);

impl ResourceLock {
    /// Wraps `lock` for the manager's `Options::leader_election_resource_lock`.
    pub fn new(lock: impl Lock) -> Self {
        Self(Arc::new(Mutex::new(Some(Box::new(lock)))))
    }

    /// Takes the lock out (once).
    pub(crate) fn take(&self) -> Option<Box<dyn Lock>> {
        self.0.lock().take()
    }
}

impl std::fmt::Debug for ResourceLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0.lock() {
            Some(lock) => write!(f, "ResourceLock({})", lock.describe()),
            None => f.write_str("ResourceLock(taken)"),
        }
    }
}

/// A Lease used as a leader-election lock.
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    labels: BTreeMap<String, String>,
    timeout: Duration,
    lease: Option<Lease>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A lock on Lease `namespace/name` held as `identity`; every API call gives up
    /// after `timeout`.
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
        timeout: Duration,
    ) -> Self {
        let namespace = namespace.into();
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            name: name.into(),
            identity: identity.into(),
            labels: BTreeMap::new(),
            timeout,
            lease: None,
        }
    }

    /// Labels to put on the Lease when it is created or updated (existing labels are
    /// kept; these win on conflict).
    pub fn with_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lease's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn call<T>(&self, f: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(Error::Api),
            Err(_) => Err(Error::Timeout(self.timeout)),
        }
    }

    /// Reads the Lease: `Ok(None)` if it does not exist.
    async fn read(&mut self) -> Result<Option<LeaderElectionRecord>, Error> {
        let lease = self.call(self.api.get_opt(&self.name)).await?;
        let rec = lease
            .as_ref()
            .map(|l| LeaderElectionRecord::from_spec(l.spec.as_ref()));
        self.lease = lease;
        Ok(rec)
    }

    /// Creates the Lease holding `rec`; returns the record as stored.
    async fn create_lease(
        &mut self,
        rec: &LeaderElectionRecord,
    ) -> Result<LeaderElectionRecord, Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                ..Default::default()
            },
            spec: Some(rec.to_spec()),
        };
        let created = self
            .call(self.api.create(&PostParams::default(), &lease))
            .await?;
        Ok(self.keep(created))
    }

    /// Writes `rec` over the Lease last read or written, guarded by its
    /// `resourceVersion` (a concurrent writer makes this fail with 409).
    async fn update_lease(
        &mut self,
        rec: &LeaderElectionRecord,
    ) -> Result<LeaderElectionRecord, Error> {
        let Some(mut lease) = self.lease.clone() else {
            return Err(Error::NotInitialized);
        };
        rec.apply_to(lease.spec.get_or_insert_with(Default::default));
        if !self.labels.is_empty() {
            let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let updated = self
            .call(self.api.replace(&self.name, &PostParams::default(), &lease))
            .await?;
        Ok(self.keep(updated))
    }

    fn keep(&mut self, lease: Lease) -> LeaderElectionRecord {
        let rec = LeaderElectionRecord::from_spec(lease.spec.as_ref());
        self.lease = Some(lease);
        rec
    }
}

#[async_trait]
impl Lock for LeaseLock {
    async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, Error> {
        self.read().await
    }
    async fn create(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error> {
        self.create_lease(rec).await
    }
    async fn update(&mut self, rec: &LeaderElectionRecord) -> Result<LeaderElectionRecord, Error> {
        self.update_lease(rec).await
    }
    fn identity(&self) -> &str {
        &self.identity
    }
    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
    fn lease(&self) -> Option<(Api<Lease>, String)> {
        Some((self.api.clone(), self.name.clone()))
    }
}
