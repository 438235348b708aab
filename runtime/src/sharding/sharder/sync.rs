//! The sharder's periodic sync (upstream's sharder controller): lists every sharded
//! resource's metadata (never watches it) and assigns, moves or drains what the webhook
//! (`super::webhook`) did not handle — objects created before the ring or while the
//! webhook was unreachable, objects of shards that died, objects whose shard changed
//! because a shard joined.
//!
//! Only objects in the namespaces the ring's `namespaceSelector` selects are synced (all
//! namespaces without one), as the webhook sees only those; cluster-scoped objects are
//! always synced, as a webhook's `namespaceSelector` never skips them.
//!
//! Every write is a merge patch guarded by the listed `resourceVersion`: an object that
//! changed since the list is counted as a conflict, and the sharder syncs again at its next
//! lease poll (upstream returns the conflict as the reconcile's error and retries with
//! backoff, `pkg/controller/sharder/reconciler.go`: "If we try to move or drain an object
//! with an old resourceVersion (conflict error), we will retry").

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::Selector;
use kube::discovery::{ApiCapabilities, Discovery};
use serde_json::{Value, json};

use super::assign::{Decision, Role, decide, key};
use super::members::Members;
use crate::sharding::{ControllerRing, GroupResource, label_drain, label_shard, metrics};

/// How many objects one sync touched, and what in the ring kept it from syncing
/// everything (an invalid `namespaceSelector`, a resource the API server does not
/// serve): the ring is not Ready while there are problems.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counts {
    pub assigned: usize,
    pub drained: usize,
    /// Objects listed with the drain label: drains asked for and not acknowledged yet.
    pub draining: usize,
    /// Writes that lost to a change made since the list (409): tried again soon, as upstream
    /// retries a conflicting move or drain with backoff instead of at the next sync period.
    pub conflicts: usize,
    pub problems: Vec<String>,
}

/// The namespaces `ring`'s `namespaceSelector` selects (`Ok(None)`: no selector, all
/// namespaces; `Err(Ok(..))`: the selector is invalid).
async fn selected_namespaces(
    client: &kube::Client,
    ring: &ControllerRing,
) -> Result<Option<HashSet<String>>, Result<String, kube::Error>> {
    let Some(selector) = ring.spec.namespace_selector.clone() else {
        return Ok(None);
    };
    let selector =
        Selector::try_from(selector).map_err(|e| Ok(format!("invalid namespaceSelector: {e}")))?;
    let lp = ListParams::default().labels_from(&selector);
    let list = Api::<Namespace>::all(client.clone())
        .list_metadata(&lp)
        .await
        .map_err(Err)?;
    Ok(Some(
        list.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
    ))
}

/// Syncs every resource of `ring`; returns what it did.
pub(crate) async fn sync_ring(
    client: &kube::Client,
    ring: &ControllerRing,
    members: &Members,
) -> Result<Counts, kube::Error> {
    let name = ring.ring_name();
    let mut counts = Counts::default();
    let namespaces = match selected_namespaces(client, ring).await {
        Ok(namespaces) => namespaces,
        Err(Ok(problem)) => {
            counts.problems.push(problem);
            return Ok(counts);
        }
        Err(Err(e)) => return Err(e),
    };
    let mut per_shard: BTreeMap<String, i64> =
        members.shards.keys().map(|s| (s.clone(), 0)).collect();
    let discovered = discover(client, ring).await?;
    for (gr, role) in resources(ring) {
        let Some((ar, caps)) = discovered.get(&gr) else {
            tracing::warn!(ring = name, group = %gr.group, resource = %gr.resource, "Sharded resource not found by discovery");
            counts
                .problems
                .push(format!("no kinds found for resource \"{gr}\""));
            continue;
        };
        let scope = Scope {
            ring: name,
            members,
            ar,
            caps,
            role,
            namespaces: namespaces.as_ref(),
        };
        let c = sync_resource(client, &scope, &mut per_shard).await?;
        counts.assigned += c.assigned;
        counts.drained += c.drained;
        counts.draining += c.draining;
        counts.conflicts += c.conflicts;
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

/// What one resource's sync works on.
struct Scope<'a> {
    ring: &'a str,
    members: &'a Members,
    ar: &'a ApiResource,
    caps: &'a ApiCapabilities,
    role: Role,
    /// The selected namespaces (`None`: all).
    namespaces: Option<&'a HashSet<String>>,
}

impl Scope<'_> {
    /// Whether an object in `namespace` (`None`: cluster-scoped) is synced.
    fn selects(&self, namespace: Option<&str>) -> bool {
        match (self.namespaces, namespace) {
            (Some(set), Some(ns)) => set.contains(ns),
            _ => true,
        }
    }
}

/// How many label patches one resource's sync has in flight: moving the objects of a
/// dead shard is bound by round trips, not by the API server's work.
const PATCH_CONCURRENCY: usize = 16;

/// One object the sync writes to: its metadata, what to write, and whether it had a
/// shard before (a movement).
type Change = (ObjectMeta, Decision, bool);

async fn sync_resource(
    client: &kube::Client,
    scope: &Scope<'_>,
    per_shard: &mut BTreeMap<String, i64>,
) -> Result<Counts, kube::Error> {
    let Scope { ring, ar, caps, .. } = *scope;
    let all: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    let list = all.list_metadata(&ListParams::default()).await?;
    let namespaced = matches!(caps.scope, kube::discovery::Scope::Namespaced);
    let selected: Vec<_> = (list.items.into_iter())
        .filter(|o| scope.selects(o.metadata.namespace.as_deref().filter(|_| namespaced)))
        .collect();
    let drain_label = label_drain(ring);
    let draining = (selected.iter())
        .filter(|o| (o.metadata.labels.as_ref()).is_some_and(|l| l.contains_key(&drain_label)))
        .count();
    let changes = (selected.into_iter()).filter_map(|o| plan(scope, o.metadata, per_shard));
    let labels = [ring, ar.group.as_str(), ar.plural.as_str()];
    let mut results = futures::stream::iter(changes)
        .map(|(meta, decision, moved)| async move {
            let api: Api<DynamicObject> = match (namespaced, meta.namespace.as_deref()) {
                (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
                _ => Api::all_with(client.clone(), ar),
            };
            (apply(&api, ring, &meta, &decision).await, decision, moved)
        })
        .buffer_unordered(PATCH_CONCURRENCY);
    let mut counts = Counts {
        draining,
        ..Counts::default()
    };
    let mut failed = None;
    while let Some((result, decision, moved)) = results.next().await {
        match result {
            Ok(()) if decision == Decision::Drain => {
                counts.drained += 1;
                metrics::DRAINS.with_label_values(&labels).inc();
            }
            Ok(()) => {
                counts.assigned += 1;
                if moved {
                    metrics::MOVEMENTS.with_label_values(&labels).inc();
                }
                metrics::ASSIGNMENTS.with_label_values(&labels).inc();
            }
            Err(kube::Error::Api(s)) if s.code == 409 => counts.conflicts += 1,
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    failed.map_or(Ok(counts), Err)
}

/// The change the sync makes to the object with `meta` (`None`: none), counting the
/// object for its shard in `per_shard`.
fn plan(
    scope: &Scope<'_>,
    meta: ObjectMeta,
    per_shard: &mut BTreeMap<String, i64>,
) -> Option<Change> {
    let Scope {
        ring,
        members,
        ar,
        role,
        ..
    } = *scope;
    let Ok(Some(k)) = key(role, &ar.group, &ar.kind, &meta) else {
        return None;
    };
    let decision = decide(members, ring, role, &k, &meta);
    let current = meta.labels.as_ref().and_then(|l| l.get(&label_shard(ring)));
    let owner = match &decision {
        Decision::Assign(s) => Some(s),
        _ => current,
    };
    if let Some(owner) = owner {
        *per_shard.entry(owner.clone()).or_default() += 1;
    }
    let moved = current.is_some();
    (decision != Decision::Keep).then_some((meta, decision, moved))
}

/// Writes `decision`'s labels (nothing for [`Decision::Keep`]).
async fn apply(
    api: &Api<DynamicObject>,
    ring: &str,
    meta: &ObjectMeta,
    decision: &Decision,
) -> Result<(), kube::Error> {
    let labels = match decision {
        Decision::Keep => return Ok(()),
        Decision::Assign(shard) => json!({ label_shard(ring): shard, label_drain(ring): null }),
        Decision::Drain => json!({ label_drain(ring): "true" }),
    };
    patch_labels(api, meta, labels).await
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
