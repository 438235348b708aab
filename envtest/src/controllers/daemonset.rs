//! The DaemonSet controller (upstream's `pkg/controller/daemon/daemon_controller.go`,
//! `update.go` and `util/daemonset_util.go`): one Pod per simulated Node whose labels the
//! template's `nodeSelector` matches (`<set>-<5 random>`, the labels
//! `controller-revision-hash` and `pod-template-generation`, a required node affinity on the
//! Node's `metadata.name` — which the simulated scheduler honours — and upstream's
//! tolerations for not-ready, unreachable, pressure and unschedulable Nodes); Pods on Nodes
//! that no longer qualify, extra ones and failed ones go. `RollingUpdate` (the default:
//! `maxUnavailable` 1) replaces Pods of an older template at most that many at a time;
//! `OnDelete` waits for deletions. Status: `desiredNumberScheduled`,
//! `currentNumberScheduled`, `numberMisscheduled`, `numberReady`, `numberAvailable`,
//! `numberUnavailable`, `updatedNumberScheduled`, `observedGeneration`.
//!
//! Differences: no ControllerRevisions (the hash label is of the template's JSON), taints
//! and the other scheduling predicates are not evaluated, `maxSurge` is not simulated.

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{
    self, Client, DAEMONSETS, Key, NODES, PODS, pod_active, pod_available, pod_phase, pod_ready,
};
use super::deployment::util::compute_hash;
use super::replicaset::{pod_from_template, put_nonzero};
use super::runner::Reconciler;
use crate::api::meta;
use crate::api::status::ApiError;

/// The DaemonSet controller.
pub(crate) struct DaemonSets;

impl Reconciler for DaemonSets {
    fn name(&self) -> &'static str {
        "daemonset"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![DAEMONSETS, PODS, NODES]
    }

    /// A Node change concerns every DaemonSet.
    fn keys(&self, c: &Client<'_>, index: usize, obj: &Value) -> Vec<Key> {
        match index {
            0 => vec![client::key_of(obj)],
            1 => super::runner::owner_key(obj, &DAEMONSETS)
                .into_iter()
                .collect(),
            _ => c
                .list_values(&DAEMONSETS, None)
                .iter()
                .map(client::key_of)
                .collect(),
        }
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let ds = c.get_value(&DAEMONSETS, &key.0, &key.1)?;
        if meta::meta_str(&ds, "deletionTimestamp").is_some() {
            return None;
        }
        let hash = compute_hash(ds.pointer("/spec/template").unwrap_or(&Value::Null), None);
        let nodes = eligible_nodes(c, &ds);
        let result =
            manage(c, &ds, &nodes, &hash).and_then(|()| write_status(c, &ds, &nodes, &hash));
        result.err().map(|e| {
            tracing::debug!(namespace = %key.0, daemonset = %key.1, error = %e.message, "daemonset sync failed; retrying");
            Duration::from_millis(100)
        })
    }
}

/// The names of the Nodes the template's `nodeSelector` matches.
fn eligible_nodes(c: &Client<'_>, ds: &Value) -> Vec<String> {
    let selector = ds
        .pointer("/spec/template/spec/nodeSelector")
        .and_then(Value::as_object);
    (c.list_values(&NODES, None).iter())
        .filter(|n| {
            let labels = client::labels_of(n);
            selector.is_none_or(|s| {
                s.iter()
                    .all(|(k, v)| v.as_str() == labels.get(k).map(String::as_str))
            })
        })
        .map(|n| meta::name(n).to_string())
        .collect()
}

/// The Pods the DaemonSet controls.
fn owned_pods(c: &Client<'_>, ds: &Value) -> Vec<Value> {
    let uid = meta::meta_str(ds, "uid").unwrap_or("");
    (c.list_values(&PODS, Some(meta::namespace(ds))).into_iter())
        .filter(|p| client::controller_ref_value(p).is_some_and(|r| r["uid"] == uid))
        .collect()
}

/// The Node a daemon Pod is for: its binding, else its node affinity.
fn node_of(pod: &Value) -> String {
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let wanted = || {
        pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
            .and_then(Value::as_str)
    };
    bound.or_else(wanted).unwrap_or("").to_string()
}

fn pod_hash(p: &Value) -> &str {
    p.pointer("/metadata/labels/controller-revision-hash")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Creates the missing daemon Pods, deletes misplaced, extra and failed ones, and replaces
/// outdated ones within `maxUnavailable`.
fn manage(c: &Client<'_>, ds: &Value, nodes: &[String], hash: &str) -> Result<(), ApiError> {
    let pods: Vec<Value> = owned_pods(c, ds)
        .into_iter()
        .filter(|p| meta::meta_str(p, "deletionTimestamp").is_none())
        .collect();
    for node in nodes {
        let on: Vec<&Value> = pods.iter().filter(|p| node_of(p) == *node).collect();
        match on.as_slice() {
            [] => {
                c.create(&PODS, meta::namespace(ds), daemon_pod(ds, node, hash))?;
            }
            [p, ..] if pod_phase(p) == "Failed" => c.delete(&PODS, p, None)?,
            [_, extra @ ..] => {
                for p in extra {
                    c.delete(&PODS, p, None)?;
                }
            }
        }
    }
    for p in pods.iter().filter(|p| !nodes.contains(&node_of(p))) {
        c.delete(&PODS, p, None)?;
    }
    let strategy = ds.pointer("/spec/updateStrategy");
    if strategy.and_then(|s| s["type"].as_str()) == Some("OnDelete") {
        return Ok(());
    }
    let total = i64::try_from(nodes.len()).unwrap_or(0);
    let max = client::int_or_percent(
        strategy.and_then(|s| s.pointer("/rollingUpdate/maxUnavailable")),
        total,
        true,
        "1",
    )
    .max(1);
    let unavailable = i64::try_from(pods.iter().filter(|p| !pod_ready(p)).count()).unwrap_or(0);
    let old = pods.iter().filter(|p| pod_hash(p) != hash && pod_active(p));
    for p in old.take(usize::try_from(max - unavailable).unwrap_or(0)) {
        c.delete(&PODS, p, None)?;
    }
    Ok(())
}

/// The daemon Pod for `node` (upstream's `CreatePodTemplate` plus the node affinity of
/// `ReplaceDaemonSetPodNodeNameNodeAffinity`).
fn daemon_pod(ds: &Value, node: &str, hash: &str) -> Value {
    let mut pod = pod_from_template(ds, &DAEMONSETS, meta::name(ds));
    if !pod["metadata"]["labels"].is_object() {
        pod["metadata"]["labels"] = json!({});
    }
    pod["metadata"]["labels"]["controller-revision-hash"] = json!(hash);
    pod["metadata"]["labels"]["pod-template-generation"] = json!(meta::generation(ds).to_string());
    let term =
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]});
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        json!({"nodeSelectorTerms": [term]});
    let mut tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !tolerations.iter().any(|t| t["key"] == key) {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
    pod["spec"]["tolerations"] = json!(tolerations);
    pod
}

/// The DaemonSet's status from its Pods (upstream's `updateDaemonSetStatus`).
fn write_status(c: &Client<'_>, ds: &Value, nodes: &[String], hash: &str) -> Result<(), ApiError> {
    let pods: Vec<Value> = owned_pods(c, ds).into_iter().filter(pod_active).collect();
    let min_ready = ds
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let now = ctrl_clock::now();
    let on_node = |n: &String| pods.iter().find(|p| node_of(p) == *n);
    let scheduled: Vec<&Value> = nodes.iter().filter_map(on_node).collect();
    let count = |f: &dyn Fn(&Value) -> bool| scheduled.iter().filter(|p| f(p)).count();
    let available = count(&|p| pod_available(p, min_ready, now));
    let mut status = json!({
        "desiredNumberScheduled": nodes.len(), "currentNumberScheduled": scheduled.len(),
        "numberMisscheduled": pods.iter().filter(|p| !nodes.contains(&node_of(p))).count(),
        "numberReady": count(&pod_ready)});
    put_nonzero(
        &mut status,
        "observedGeneration",
        usize::try_from(meta::generation(ds)).unwrap_or(0),
    );
    put_nonzero(
        &mut status,
        "updatedNumberScheduled",
        count(&|p| pod_hash(p) == hash),
    );
    put_nonzero(&mut status, "numberAvailable", available);
    put_nonzero(
        &mut status,
        "numberUnavailable",
        nodes.len().saturating_sub(available),
    );
    if ds.get("status") == Some(&status) {
        return Ok(());
    }
    c.update(&DAEMONSETS, ds, Some("status"), |v| v["status"] = status)
        .map(|_| ())
}
