//! The sharder's periodic sync (upstream's sharder controller): lists every sharded
//! resource's metadata (never watches it) and assigns, moves or drains what the webhook
//! (`super::webhook`) did not handle — objects created before the ring or while the
//! webhook was unreachable, objects of shards that died, objects whose shard changed
//! because a shard joined.
//!
//! Every write is a merge patch guarded by the listed `resourceVersion`: an object that
//! changed since the list is left to the next sync.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::{ApiCapabilities, Discovery, Scope};
use serde_json::{Value, json};

use super::assign::{Decision, Role, decide, key};
use super::members::Members;
use crate::sharding::{ControllerRing, GroupResource, label_drain, label_shard, metrics};

/// How many objects one sync touched.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub assigned: usize,
    pub drained: usize,
}

/// Syncs every resource of `ring`; returns what it did.
pub(crate) async fn sync_ring(
    client: &kube::Client,
    ring: &ControllerRing,
    members: &Members,
) -> Result<Counts, kube::Error> {
    let name = ring.ring_name();
    let mut counts = Counts::default();
    let mut per_shard: BTreeMap<String, i64> =
        members.shards.keys().map(|s| (s.clone(), 0)).collect();
    let discovered = discover(client, ring).await?;
    for (gr, role) in resources(ring) {
        let Some((ar, caps)) = discovered.get(&gr) else {
            tracing::warn!(ring = name, group = %gr.group, resource = %gr.resource, "Sharded resource not found by discovery");
            continue;
        };
        let c = sync_resource(client, name, members, ar, caps, role, &mut per_shard).await?;
        counts.assigned += c.assigned;
        counts.drained += c.drained;
    }
    for (shard, n) in per_shard {
        metrics::OBJECTS_ASSIGNED
            .with_label_values(&[name, &shard])
            .set(n);
    }
    Ok(counts)
}

/// The ring's resources with their roles, main resources first.
fn resources(ring: &ControllerRing) -> Vec<(GroupResource, Role)> {
    let main = ring
        .spec
        .resources
        .iter()
        .map(|r| (r.group_resource.clone(), Role::Main));
    let controlled = ring.spec.resources.iter().flat_map(|r| {
        r.controlled_resources
            .iter()
            .map(|c| (c.clone(), Role::Controlled))
    });
    main.chain(controlled).collect()
}

type Discovered = HashMap<GroupResource, (ApiResource, ApiCapabilities)>;

/// The API resources of the ring's groups.
async fn discover(client: &kube::Client, ring: &ControllerRing) -> Result<Discovered, kube::Error> {
    let groups: Vec<String> = resources(ring)
        .into_iter()
        .map(|(gr, _)| gr.group)
        .collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let discovery = Discovery::new(client.clone()).filter(&groups).run().await?;
    let mut out = HashMap::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            out.insert(
                GroupResource::new(ar.group.clone(), ar.plural.clone()),
                (ar, caps),
            );
        }
    }
    Ok(out)
}

async fn sync_resource(
    client: &kube::Client,
    ring: &str,
    members: &Members,
    ar: &ApiResource,
    caps: &ApiCapabilities,
    role: Role,
    per_shard: &mut BTreeMap<String, i64>,
) -> Result<Counts, kube::Error> {
    let all: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    let list = all.list_metadata(&ListParams::default()).await?;
    let mut counts = Counts::default();
    let namespaced = matches!(caps.scope, Scope::Namespaced);
    let labels = [ring, ar.group.as_str(), ar.plural.as_str()];
    for obj in list.items {
        let meta = &obj.metadata;
        let Ok(Some(k)) = key(role, &ar.group, &ar.kind, meta) else {
            continue;
        };
        let decision = decide(members, ring, role, &k, meta);
        let current = meta.labels.as_ref().and_then(|l| l.get(&label_shard(ring)));
        let owner = match &decision {
            Decision::Assign(s) => Some(s),
            _ => current,
        };
        if let Some(owner) = owner {
            *per_shard.entry(owner.clone()).or_default() += 1;
        }
        let api: Api<DynamicObject> = match (namespaced, meta.namespace.as_deref()) {
            (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
            _ => Api::all_with(client.clone(), ar),
        };
        match apply(&api, ring, meta, &decision).await {
            Ok(false) => {}
            Ok(true) if decision == Decision::Drain => {
                counts.drained += 1;
                metrics::DRAINS.with_label_values(&labels).inc();
            }
            Ok(true) => {
                counts.assigned += 1;
                if current.is_some() {
                    metrics::MOVEMENTS.with_label_values(&labels).inc();
                }
                metrics::ASSIGNMENTS.with_label_values(&labels).inc();
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(counts)
}

/// Writes `decision`'s labels; `Ok(false)` when there is nothing to write.
async fn apply(
    api: &Api<DynamicObject>,
    ring: &str,
    meta: &ObjectMeta,
    decision: &Decision,
) -> Result<bool, kube::Error> {
    let labels = match decision {
        Decision::Keep => return Ok(false),
        Decision::Assign(shard) => json!({ label_shard(ring): shard, label_drain(ring): null }),
        Decision::Drain => json!({ label_drain(ring): "true" }),
    };
    patch_labels(api, meta, labels).await.map(|()| true)
}

/// Merge-patches `labels` onto the object, only if it is still at the listed version.
async fn patch_labels(
    api: &Api<DynamicObject>,
    meta: &ObjectMeta,
    labels: Value,
) -> Result<(), kube::Error> {
    let name = meta.name.clone().unwrap_or_default();
    let patch =
        json!({ "metadata": { "resourceVersion": meta.resource_version, "labels": labels } });
    api.patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}
