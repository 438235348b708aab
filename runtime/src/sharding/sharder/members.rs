//! The ring's membership as the sharder sees it: the shard leases of a ring, their
//! states, and the hash ring of the available ones (upstream's `ring.FromLeases` and
//! the shardlease controller).
//!
//! [`Members::load`] lists the leases; [`Members::maintain`] is the shardlease
//! controller's work, done by the leader only: take over Uncertain leases (the shard is
//! then Dead and its objects move), delete Orphaned ones, and keep the state label.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use super::IDENTITY_SHARDER;
use crate::sharding::{HashRing, LABEL_CONTROLLER_RING, LABEL_STATE, ShardState, shard_state};

/// The shards of one ring at one instant.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// Shard name -> (lease, state).
    pub shards: BTreeMap<String, (Lease, ShardState)>,
    /// The ring of the available shards.
    pub ring: HashRing,
}

impl Members {
    /// Lists the shard leases of `ring` in `api`'s namespace and judges them now.
    pub async fn load(api: &Api<Lease>, ring: &str) -> Result<Self, kube::Error> {
        let leases = api
            .list(&ListParams::default().labels(&selector(ring)))
            .await?;
        Ok(Self::judge(leases.items, ctrl_clock::now()))
    }

    /// The members given by `leases` (the shard leases of one ring) at `now`.
    pub fn judge(leases: impl IntoIterator<Item = Lease>, now: Timestamp) -> Self {
        let shards: BTreeMap<_, _> = leases
            .into_iter()
            .filter_map(|l| {
                let name = l.metadata.name.clone()?;
                let state = shard_state(&l, now);
                Some((name, (l, state)))
            })
            .collect();
        let ring = HashRing::new(
            shards
                .iter()
                .filter(|(_, (_, s))| s.is_available())
                .map(|(n, _)| n.as_str()),
        );
        Self { shards, ring }
    }

    /// The state of shard `name` (Unknown if it has no lease).
    pub fn state(&self, name: &str) -> ShardState {
        self.shards
            .get(name)
            .map_or(ShardState::Unknown, |(_, s)| *s)
    }

    /// The number of available shards.
    pub fn available(&self) -> usize {
        self.shards
            .values()
            .filter(|(_, s)| s.is_available())
            .count()
    }

    /// Logs how each lease was judged (holder, renew time, state): called when the set
    /// of available shards changed.
    pub fn log_judgement(&self, ring: &str) {
        for (name, (lease, state)) in &self.shards {
            let spec = lease.spec.as_ref();
            let holder = spec
                .and_then(|s| s.holder_identity.as_deref())
                .unwrap_or("");
            let renew = spec
                .and_then(|s| s.renew_time.as_ref())
                .map(|t| t.0.to_string());
            tracing::info!(ring, shard = %name, holder, renew_time = ?renew, state = state.as_str(), "Shard lease judged");
        }
    }

    /// Takes over Uncertain leases, deletes Orphaned ones, labels the rest with their
    /// state. Returns whether any lease changed hands (the ring must be reloaded).
    pub async fn maintain(&self, api: &Api<Lease>, ring: &str) -> bool {
        let mut changed = false;
        for (name, (lease, state)) in &self.shards {
            let result = match state {
                ShardState::Uncertain => {
                    changed = true;
                    take_over(api, lease.clone()).await
                }
                ShardState::Orphaned => {
                    api.delete(name, &DeleteParams::default()).await.map(|_| ())
                }
                _ => label_state(api, lease, *state).await,
            };
            match result {
                Ok(()) if *state == ShardState::Uncertain => {
                    tracing::info!(ring, shard = %name, "Shard lease is uncertain, acquired it: the shard is dead")
                }
                Ok(()) => {}
                Err(error) => {
                    tracing::warn!(ring, shard = %name, %error, "Could not maintain shard lease")
                }
            }
        }
        changed
    }
}

/// The label selector of `ring`'s shard leases.
pub(crate) fn selector(ring: &str) -> String {
    format!("{LABEL_CONTROLLER_RING}={ring}")
}

/// Acquires an uncertain shard lease as the sharder (upstream's shardlease controller):
/// the shard can no longer renew it and counts as dead.
async fn take_over(api: &Api<Lease>, mut lease: Lease) -> Result<(), kube::Error> {
    let name = lease.metadata.name.clone().unwrap_or_default();
    let now = MicroTime(ctrl_clock::now());
    let spec = lease.spec.get_or_insert_with(Default::default);
    spec.holder_identity = Some(IDENTITY_SHARDER.to_string());
    spec.acquire_time = Some(now.clone());
    spec.renew_time = Some(now);
    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    lease
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(
            LABEL_STATE.to_string(),
            ShardState::Dead.as_str().to_string(),
        );
    api.replace(&name, &PostParams::default(), &lease)
        .await
        .map(|_| ())
}

/// Keeps the state label of a lease current (observability only, as upstream).
async fn label_state(
    api: &Api<Lease>,
    lease: &Lease,
    state: ShardState,
) -> Result<(), kube::Error> {
    let current = lease
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_STATE));
    if current.map(String::as_str) == Some(state.as_str()) {
        return Ok(());
    }
    let name = lease.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({ "metadata": { "labels": { LABEL_STATE: state.as_str() } } });
    api.patch(
        &name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}
