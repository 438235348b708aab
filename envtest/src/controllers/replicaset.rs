//! The ReplicaSet controller (upstream's `pkg/controller/replicaset/replica_set.go`): a
//! ReplicaSet owns the active Pods its selector matches — adopting orphans, releasing Pods
//! whose labels no longer match — and creates Pods from its template (`<rs>-<5 random>`,
//! controller reference) or deletes the least valuable ones (unscheduled before scheduled,
//! pending before running, not ready before ready, newest first: `getPodsToDelete`) until it
//! has `spec.replicas` (1 when unset). Status as upstream's `calculateStatus`: `replicas`,
//! `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` (ready for
//! `minReadySeconds`), `observedGeneration`; zero counts other than `replicas` are omitted as
//! Go's `omitempty` does.
//!
//! Not simulated: expectations (the store is read directly, never stale), slow-start
//! batching, the `ReplicaFailure` condition (creates only fail when the namespace is going),
//! the `terminatingReplicas` field (feature-gated upstream). A run of the [`super::runner`]
//! loop; the simulated kubelet (`super::kubelet`) makes the Pods ready.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::{self, Client, Key, PODS, REPLICASETS, pod_active, pod_available, pod_ready};
use super::runner::{Reconciler, owner_key};
use crate::api::meta;

/// The ReplicaSet controller.
pub(crate) struct ReplicaSets;

impl Reconciler for ReplicaSets {
    fn name(&self) -> &'static str {
        "replicaset"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![REPLICASETS, PODS]
    }

    /// A Pod maps to its controlling ReplicaSet, an orphan to every ReplicaSet that selects
    /// it (which may adopt it).
    fn keys(&self, c: &Client<'_>, index: usize, obj: &Value) -> Vec<Key> {
        if index == 0 {
            return vec![client::key_of(obj)];
        }
        if client::controller_ref_value(obj).is_some() {
            return owner_key(obj, &REPLICASETS).into_iter().collect();
        }
        let ns = meta::namespace(obj);
        (c.list::<ReplicaSet>(&REPLICASETS, Some(ns)).into_iter())
            .filter(|rs| client::selects(rs.spec.as_ref().map(|s| &s.selector), obj))
            .map(|rs| (ns.to_string(), rs.metadata.name.unwrap_or_default()))
            .collect()
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let rsv = c.get_value(&REPLICASETS, &key.0, &key.1)?;
        let rs = ReplicaSet::deserialize(&rsv).ok()?;
        let spec = rs.spec.clone().unwrap_or_default();
        let pods = owned_pods(c, &rsv, &rs);
        let want = i64::from(spec.replicas.unwrap_or(1));
        let deleting = rs.metadata.deletion_timestamp.is_some();
        let mut retry = None;
        if !deleting && manage(c, &rsv, &pods, want).is_err() {
            retry = Some(Duration::from_millis(200));
        }
        let pods = owned_pods(c, &rsv, &rs);
        let min_ready = i64::from(spec.min_ready_seconds.unwrap_or(0));
        let status = status(&rsv, &pods, min_ready);
        if rsv.get("status") != Some(&status)
            && c.update(&REPLICASETS, &rsv, Some("status"), |v| v["status"] = status)
                .is_err()
        {
            retry = Some(Duration::from_millis(50));
        }
        let waiting =
            (pods.iter()).any(|p| pod_ready(p) && !pod_available(p, min_ready, ctrl_clock::now()));
        retry.or(waiting.then(|| Duration::from_secs(min_ready.max(1).unsigned_abs())))
    }
}

/// The active Pods of the ReplicaSet's namespace that it owns after adoption and release.
fn owned_pods(c: &Client<'_>, rsv: &Value, rs: &ReplicaSet) -> Vec<Value> {
    let sel = rs.spec.as_ref().map(|s| &s.selector);
    let candidates: Vec<Value> = (c.list_values(&PODS, Some(meta::namespace(rsv))).into_iter())
        .filter(pod_active)
        .collect();
    client::claim_all(
        c,
        &PODS,
        rsv,
        &REPLICASETS,
        |p| client::selects(sel, p),
        candidates,
    )
}

/// Creates or deletes Pods until `want` are active.
fn manage(
    c: &Client<'_>,
    rsv: &Value,
    pods: &[Value],
    want: i64,
) -> Result<(), crate::api::status::ApiError> {
    let have = i64::try_from(pods.len()).unwrap_or(i64::MAX);
    if have < want {
        let ns = meta::namespace(rsv);
        for _ in have..want.min(have + 500) {
            c.create(
                &PODS,
                ns,
                pod_from_template(rsv, &REPLICASETS, meta::name(rsv)),
            )?;
        }
        tracing::debug!(
            namespace = ns,
            replicaset = meta::name(rsv),
            created = want - have,
            "pods created"
        );
    } else if have > want {
        let mut ranked: Vec<&Value> = pods.iter().collect();
        ranked.sort_by_key(|p| rank(p));
        let n = usize::try_from(have - want).unwrap_or(0);
        for p in ranked.into_iter().take(n) {
            c.delete(&PODS, p, None)?;
        }
    }
    Ok(())
}

/// Upstream's `ActivePods` order, the Pods to delete first first: unscheduled, then pending,
/// unknown, running; not ready before ready; newer before older.
fn rank(p: &Value) -> (bool, u8, bool, std::cmp::Reverse<String>) {
    let scheduled = p
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = match client::pod_phase(p) {
        "Pending" | "" => 0,
        "Running" => 2,
        _ => 1,
    };
    let created = meta::meta_str(p, "creationTimestamp")
        .unwrap_or("")
        .to_string();
    (scheduled, phase, pod_ready(p), std::cmp::Reverse(created))
}

/// A Pod of `owner`'s `spec.template` (upstream's `GetPodFromTemplate`): the template's
/// labels, annotations, finalizers and spec, named `<prefix>-<5 random>`, controlled by
/// `owner`.
pub(crate) fn pod_from_template(owner: &Value, res: &client::Res, prefix: &str) -> Value {
    let t = owner.pointer("/spec/template").cloned().unwrap_or_default();
    let mut m = json!({"generateName": format!("{prefix}-"),
        "ownerReferences": [client::new_controller_ref(owner, res)]});
    for f in ["labels", "annotations", "finalizers"] {
        if let Some(v) = t.pointer(&format!("/metadata/{f}")) {
            m[f] = v.clone();
        }
    }
    json!({"metadata": m, "spec": t.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

/// The ReplicaSet's status from its Pods (upstream's `calculateStatus`).
fn status(rsv: &Value, pods: &[Value], min_ready: i64) -> Value {
    let template_labels = (rsv
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object))
    .cloned()
    .unwrap_or_default();
    let now = ctrl_clock::now();
    let count = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count();
    let fully = count(&|p| {
        let l = client::labels_of(p);
        (template_labels.iter()).all(|(k, v)| v.as_str() == l.get(k).map(String::as_str))
    });
    let mut status = json!({"replicas": pods.len()});
    put_nonzero(&mut status, "fullyLabeledReplicas", fully);
    put_nonzero(&mut status, "readyReplicas", count(&pod_ready));
    put_nonzero(
        &mut status,
        "availableReplicas",
        count(&|p| pod_available(p, min_ready, now)),
    );
    put_nonzero(
        &mut status,
        "observedGeneration",
        usize::try_from(meta::generation(rsv)).unwrap_or(0),
    );
    if let Some(conds) = rsv.pointer("/status/conditions") {
        status["conditions"] = conds.clone();
    }
    status
}

/// Sets `field` unless it is zero (Go's `omitempty`).
pub(crate) fn put_nonzero(obj: &mut Value, field: &str, n: usize) {
    if n != 0 {
        obj[field] = json!(n);
    }
}
