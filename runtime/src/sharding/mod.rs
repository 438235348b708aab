//! Object-level sharding across replicas, compatible with
//! [kubernetes-controller-sharding](https://github.com/timebertt/kubernetes-controller-sharding):
//! instead of one leader doing all the work, every replica is a *shard* of a *ring* and
//! reconciles only the objects labelled with its name.
//!
//! The contract is upstream's, label for label, so a ctrl shard can join a ring whose
//! sharder is the Go one and ctrl's sharder can drive Go shards:
//!
//! - each shard holds a Lease named after itself, labelled
//!   [`LABEL_CONTROLLER_RING`]`=<ring>` (`lease`: [`ShardLease`], [`ShardState`]);
//! - objects carry [`label_shard`]`(ring)=<shard>`; the sharder asks a shard to let go of
//!   an object with [`label_drain`]`(ring)`, and the shard acknowledges by removing both
//!   labels (`shard`: [`Shard`], [`acknowledge_drain`]);
//! - the shard of an object is a consistent-hash answer, xxhash64 with 100 virtual nodes
//!   per shard over `group/Kind/namespace/name` of the object or of its controller owner
//!   (`ring`: [`HashRing`], [`key_for_object`], [`key_for_controller`]);
//! - the sharder (`sharder`: [`Sharder`]) runs leader-elected: a mutating webhook assigns
//!   new and unassigned objects, a periodic sync assigns what the webhook missed, moves
//!   objects off dead shards and drains objects whose shard changed because one joined,
//!   and it takes over (then deletes) the leases of shards that stopped renewing;
//! - `controllerring`: the [`ControllerRing`] API naming the sharded resources;
//! - `metrics`: assignments, movements, drains, ring size, objects per shard.
//!
//! The manager ([`crate::manager`]) runs the [`ShardLease`] (caches group) and the
//! [`Sharder`] (leader election group); `ctrl-builder`'s `ControllerBuilder::sharded` puts
//! a controller on one shard: its caches select only the shard's label
//! ([`Shard::select`]) and drains are acknowledged before the reconciler sees the object.
//! `docs/sharding.md` has the design, the guarantees and the limits.

mod controllerring;
mod lease;
pub mod metrics;
mod ring;
mod shard;
mod sharder;

pub use controllerring::{
    ControllerRing, ControllerRingSpec, ControllerRingStatus, GroupResource, RingResource,
    controllerring_crd,
};
pub use lease::{LEASE_TTL, ShardLease, ShardState, lease_labels, shard_state};
pub use ring::{HashRing, KeyError, TOKENS_PER_SHARD, hash, key_for_controller, key_for_object};
pub use shard::{Shard, ShardedReconciler, acknowledge_drain};
pub use sharder::{
    CONDITION_READY, IDENTITY_SHARDER, RingSharders, Sharder, SharderOptions, WebhookEndpoint,
    webhook_configuration, webhook_path,
};

/// The label on shard leases naming their ring.
pub const LABEL_CONTROLLER_RING: &str = "alpha.sharding.timebertt.dev/controllerring";
/// The label the sharder keeps on shard leases with their [`ShardState`] (observability only).
pub const LABEL_STATE: &str = "alpha.sharding.timebertt.dev/state";
/// The prefix of the shard label ([`label_shard`]).
pub const LABEL_SHARD_PREFIX: &str = "shard.alpha.sharding.timebertt.dev/";
/// The prefix of the drain label ([`label_drain`]).
pub const LABEL_DRAIN_PREFIX: &str = "drain.alpha.sharding.timebertt.dev/";

/// The label naming an object's shard in `ring`: `shard.alpha.sharding.timebertt.dev/<ring>`.
pub fn label_shard(ring: &str) -> String {
    format!("{LABEL_SHARD_PREFIX}{ring}")
}

/// The label asking an object's shard in `ring` to let it go:
/// `drain.alpha.sharding.timebertt.dev/<ring>`.
pub fn label_drain(ring: &str) -> String {
    format!("{LABEL_DRAIN_PREFIX}{ring}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_keys_are_upstreams() {
        assert_eq!(
            super::label_shard("foo"),
            "shard.alpha.sharding.timebertt.dev/foo"
        );
        assert_eq!(
            super::label_drain("foo"),
            "drain.alpha.sharding.timebertt.dev/foo"
        );
    }
}
