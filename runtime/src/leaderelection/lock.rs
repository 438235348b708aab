//! [`LeaseLock`]: the `coordination.k8s.io/v1` Lease the elector locks on
//! (client-go's `resourcelock.LeaseLock`).
//!
//! It keeps the Lease it last read or wrote and sends every update with that
//! object's `resourceVersion`, so a write based on a stale read fails with 409 and
//! the elector (`elector`) simply tries again later. Each API call is bounded by the
//! lock's call timeout, as controller-runtime bounds the leader-election client.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::{Error, LeaderElectionRecord};

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

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// `namespace/name`, for logs.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lease's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Lease API the lock writes through (the elector watches it too).
    pub(crate) fn api(&self) -> &Api<Lease> {
        &self.api
    }

    async fn call<T>(&self, f: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(Error::Api),
            Err(_) => Err(Error::Timeout(self.timeout)),
        }
    }

    /// Reads the Lease: `Ok(None)` if it does not exist.
    pub async fn get(&mut self) -> Result<Option<LeaderElectionRecord>, Error> {
        let lease = self.call(self.api.get_opt(&self.name)).await?;
        let rec = lease
            .as_ref()
            .map(|l| LeaderElectionRecord::from_spec(l.spec.as_ref()));
        self.lease = lease;
        Ok(rec)
    }

    /// Creates the Lease holding `rec`; returns the record as stored.
    pub async fn create(
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
    pub async fn update(
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
