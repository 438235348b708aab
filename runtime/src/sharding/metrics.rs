//! Sharding metrics, registered in the manager's registry ([`crate::metrics`]), named
//! as upstream's sharder names them (`controller_sharding_*`) so its dashboards apply.
//!
//! The sharder (`super::sharder`) counts assignments, movements and drains and sets the
//! ring size; the shard side (`super::shard`) counts drains it acknowledged and the
//! objects it was assigned.

use std::sync::LazyLock;

use prometheus::{IntCounterVec, IntGaugeVec, Opts};

fn counter(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    crate::metrics::registry()
        .register(Box::new(c.clone()))
        .ok();
    c
}

fn gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    crate::metrics::registry()
        .register(Box::new(g.clone()))
        .ok();
    g
}

/// `controller_sharding_assignments_total{controllerring, group, resource}`: objects the
/// sharder labelled with a shard (webhook and sync).
pub static ASSIGNMENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter(
        "controller_sharding_assignments_total",
        "Total number of shard assignments by the sharder",
        &["controllerring", "group", "resource"],
    )
});

/// `controller_sharding_movements_total{controllerring, group, resource}`: objects moved
/// off a shard that was no longer available.
pub static MOVEMENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter(
        "controller_sharding_movements_total",
        "Total number of shard movements triggered by the sharder",
        &["controllerring", "group", "resource"],
    )
});

/// `controller_sharding_drains_total{controllerring, group, resource}`: drains the
/// sharder asked for (objects moving off a shard that is still available).
pub static DRAINS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter(
        "controller_sharding_drains_total",
        "Total number of shard drains triggered by the sharder",
        &["controllerring", "group", "resource"],
    )
});

/// `controller_sharding_drain_acknowledgements_total{controllerring, shard}`: drains a
/// shard acknowledged (removed both labels).
pub static DRAIN_ACKS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter(
        "controller_sharding_drain_acknowledgements_total",
        "Total number of drains acknowledged by a shard",
        &["controllerring", "shard"],
    )
});

/// `controller_sharding_ring_size{controllerring}`: available shards in the ring.
pub static RING_SIZE: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge(
        "controller_sharding_ring_size",
        "Number of available shards in the ring",
        &["controllerring"],
    )
});

/// `controller_sharding_objects_assigned{controllerring, shard}`: objects assigned to each
/// shard at the sharder's last sync.
pub static OBJECTS_ASSIGNED: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge(
        "controller_sharding_objects_assigned",
        "Number of objects assigned to each shard at the last sync",
        &["controllerring", "shard"],
    )
});
