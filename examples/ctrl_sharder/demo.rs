//! The local demo: ring `demo` over the ConfigMaps of namespaces labelled
//! `sharding-demo=true` (its `namespaceSelector`), two shards that only hold their
//! Leases (what a shard in any language does besides reconciling its objects), and
//! ConfigMaps created in a selected and an unselected namespace, with the shard each
//! one got.

use std::collections::BTreeMap;
use std::time::Duration;

use ctrl::CancellationToken;
use ctrl::manager::{BoxError, Manager};
use ctrl::sharding::{ControllerRing, GroupResource, RingResource, Shard, label_shard};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ObjectMeta, PostParams};

/// The demo ring.
pub const RING: &str = "demo";
/// The demo's shards.
pub const SHARDS: [&str; 2] = ["demo-shard-0", "demo-shard-1"];

/// Adds the demo shards' Leases to `mgr` (they run on every replica, leader or not).
pub fn add_shards(mgr: &Manager, client: kube::Client, namespace: &str) -> Result<(), BoxError> {
    for id in SHARDS {
        mgr.add(Shard::new(RING, id, namespace).lease(client.clone())?)?;
    }
    Ok(())
}

fn namespace(name: &str, selected: bool) -> Namespace {
    let labels = selected.then(|| BTreeMap::from([("sharding-demo".into(), "true".into())]));
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn ring() -> ControllerRing {
    let mut ring = ControllerRing::with_resources(
        RING,
        vec![RingResource {
            group_resource: GroupResource::new("", "configmaps"),
            controlled_resources: vec![],
        }],
    );
    ring.spec.namespace_selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("sharding-demo".into(), "true".into())])),
        match_expressions: None,
    });
    ring
}

/// Waits (up to 10 s) until the sharder registered the ring's webhook; false if
/// stopped first.
async fn webhook_registered(client: &kube::Client, stop: &CancellationToken) -> bool {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let name = format!("controllerring-{RING}");
    for _ in 0..100 {
        if matches!(api.get_opt(&name).await, Ok(Some(_))) {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.cancelled() => return false,
        }
    }
    tracing::warn!(target: "ctrl_sharder::demo", "the ring's webhook is not registered yet; creating the ConfigMaps anyway");
    true
}

/// Creates the ring, the namespaces and the ConfigMaps, and logs each ConfigMap's shard.
pub async fn run(client: kube::Client, stop: CancellationToken) -> Result<(), kube::Error> {
    let pp = PostParams::default();
    Api::<ControllerRing>::all(client.clone())
        .create(&pp, &ring())
        .await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.create(&pp, &namespace("sharded", true)).await?;
    namespaces
        .create(&pp, &namespace("not-sharded", false))
        .await?;
    tracing::info!(target: "ctrl_sharder::demo", "ring {RING}: ConfigMaps in namespaces labelled sharding-demo=true, shards {SHARDS:?}");
    if !webhook_registered(&client, &stop).await {
        return Ok(());
    }
    for ns in ["sharded", "not-sharded"] {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..4 {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("config-{i}")),
                    ..Default::default()
                },
                ..Default::default()
            };
            let made = api.create(&pp, &cm).await?;
            let shard = made
                .metadata
                .labels
                .unwrap_or_default()
                .remove(&label_shard(RING));
            let shard = shard.unwrap_or_else(|| "none (namespace not selected)".into());
            tracing::info!(target: "ctrl_sharder::demo", "created ConfigMap {ns}/config-{i}: shard {shard}");
        }
    }
    Ok(())
}
