//! The StatefulSet controller (upstream's `pkg/controller/statefulset/`: `stateful_set_control.go`,
//! `stateful_set_utils.go`, and `pkg/controller/history/` for ControllerRevisions): Pods
//! `<set>-<ordinal>` for ordinals `spec.ordinals.start` (0) onwards, with the labels
//! `controller-revision-hash`, `statefulset.kubernetes.io/pod-name` and
//! `apps.kubernetes.io/pod-index`, `hostname` = the Pod's name and `subdomain` =
//! `serviceName`; a PersistentVolumeClaim `<claim>-<set>-<ordinal>` per
//! `volumeClaimTemplates` entry, mounted as the volume of the claim's name (claims are kept,
//! as the default `Retain` retention policy does). `OrderedReady` (the default) creates one
//! Pod at a time, each after the ones before it are Running and Ready, and removes them
//! from the highest ordinal down, one at a time; `Parallel` does all at once. Each template
//! is a ControllerRevision (`<set>-<hash>`, revision numbers counting up); `RollingUpdate`
//! (the default) replaces Pods of another revision from the highest ordinal down to
//! `partition`, one at a time, each after the last is Ready; `OnDelete` waits for deletions.
//! Failed Pods are replaced. Status: `observedGeneration`, `replicas`, `readyReplicas`,
//! `currentReplicas`, `updatedReplicas`, `availableReplicas`, `currentRevision`,
//! `updateRevision` (current follows update once every Pod is updated and ready),
//! `collisionCount`.
//!
//! Differences: the revision hash is over the template's JSON (as for Deployments); no
//! `maxUnavailable`, no PVC retention policy other than `Retain`, PVCs stay `Pending` (no
//! volume provisioner).

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{
    self, Client, Key, PODS, PVCS, REVISIONS, STATEFULSETS, pod_available, pod_phase, pod_ready,
};
use super::deployment::util::{canonical, compute_hash, spec_replicas};
use super::replicaset::{pod_from_template, put_nonzero};
use super::runner::Reconciler;
use crate::api::meta;
use crate::api::status::ApiError;

/// The StatefulSet controller.
pub(crate) struct StatefulSets;

const REVISION_LABEL: &str = "controller-revision-hash";

impl Reconciler for StatefulSets {
    fn name(&self) -> &'static str {
        "statefulset"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![STATEFULSETS, PODS]
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let set = c.get_value(&STATEFULSETS, &key.0, &key.1)?;
        if meta::meta_str(&set, "deletionTimestamp").is_some() {
            return None;
        }
        let result = (|| {
            let revision = update_revision(c, &set)?;
            let pods = owned_pods(c, &set);
            let wait = manage(c, &set, &pods, &revision)?;
            let pods = owned_pods(c, &set);
            write_status(c, &set, &pods, &revision)?;
            Ok::<_, ApiError>(wait)
        })();
        result.unwrap_or_else(|e| {
            tracing::debug!(namespace = %key.0, statefulset = %key.1, error = %e.message, "statefulset sync failed; retrying");
            Some(Duration::from_millis(100))
        })
    }
}

/// The Pods the set owns after adoption and release (selected by its selector and named
/// as its members).
fn owned_pods(c: &Client<'_>, set: &Value) -> Vec<Value> {
    let sel = set
        .pointer("/spec/selector")
        .and_then(|s| serde::Deserialize::deserialize(s).ok());
    let name = meta::name(set).to_string();
    let member = move |p: &Value| {
        ordinal(&name, meta::name(p)).is_some() && client::selects(sel.as_ref(), p)
    };
    let pods = c.list_values(&PODS, Some(meta::namespace(set)));
    client::claim_all(c, &PODS, set, &STATEFULSETS, member, pods)
}

/// The ordinal of Pod `pod` of set `set` (`<set>-<n>`).
fn ordinal(set: &str, pod: &str) -> Option<i64> {
    let n = pod.strip_prefix(set)?.strip_prefix('-')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.parse().ok())?
}

/// The name of the ControllerRevision of the set's current template, created if missing.
fn update_revision(c: &Client<'_>, set: &Value) -> Result<String, ApiError> {
    let ns = meta::namespace(set);
    let data = json!({"spec": {"template": {"$patch": "replace"}}});
    let mut data = data;
    if let Some(t) = set.pointer("/spec/template").and_then(Value::as_object) {
        for (k, v) in t {
            data["spec"]["template"][k] = v.clone();
        }
    }
    let data = canonical(&data);
    let uid = meta::meta_str(set, "uid").unwrap_or("");
    let revisions: Vec<Value> = (c.list_values(&REVISIONS, Some(ns)).into_iter())
        .filter(|r| client::controller_ref_value(r).is_some_and(|o| o["uid"] == uid))
        .collect();
    if let Some(r) = revisions
        .iter()
        .find(|r| r.get("data").map(canonical).as_ref() == Some(&data))
    {
        return Ok(meta::name(r).to_string());
    }
    let next = revisions
        .iter()
        .filter_map(|r| r["revision"].as_i64())
        .max()
        .unwrap_or(0)
        + 1;
    let collisions = set
        .pointer("/status/collisionCount")
        .and_then(Value::as_i64);
    let name = format!("{}-{}", meta::name(set), compute_hash(&data, collisions));
    let labels = set
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let rev = json!({"metadata": {"name": name, "namespace": ns, "labels": labels,
        "ownerReferences": [client::new_controller_ref(set, &STATEFULSETS)]},
        "data": data, "revision": next});
    c.create(&REVISIONS, ns, rev)?;
    Ok(name)
}

/// Creates, replaces and removes Pods as the pod management policy and update strategy
/// allow; when to look again.
fn manage(
    c: &Client<'_>,
    set: &Value,
    pods: &[Value],
    revision: &str,
) -> Result<Option<Duration>, ApiError> {
    let name = meta::name(set);
    let start = set
        .pointer("/spec/ordinals/start")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let end = start + spec_replicas(set);
    let ordered = set
        .pointer("/spec/podManagementPolicy")
        .and_then(Value::as_str)
        != Some("Parallel");
    let pod_at = |i: i64| {
        pods.iter()
            .find(|p| ordinal(name, meta::name(p)) == Some(i))
    };
    for i in start..end {
        match pod_at(i) {
            None => {
                create_member(c, set, i, revision)?;
                if ordered {
                    return Ok(None);
                }
            }
            Some(p)
                if pod_phase(p) == "Failed" && meta::meta_str(p, "deletionTimestamp").is_none() =>
            {
                c.delete(&PODS, p, None)?;
                return Ok(None);
            }
            Some(p) if ordered && !(pod_phase(p) == "Running" && pod_ready(p)) => return Ok(None),
            Some(_) => {}
        }
    }
    let mut extra: Vec<&Value> = (pods.iter())
        .filter(|p| ordinal(name, meta::name(p)).is_some_and(|i| i < start || i >= end))
        .collect();
    extra.sort_by_key(|p| std::cmp::Reverse(ordinal(name, meta::name(p))));
    for p in extra {
        if meta::meta_str(p, "deletionTimestamp").is_none() {
            c.delete(&PODS, p, None)?;
        }
        if ordered {
            return Ok(None);
        }
    }
    rolling_update(c, set, pods, revision, start, end)
}

/// `RollingUpdate`: the highest-ordinal Pod at or above the partition that is not at
/// `revision` goes (once every Pod is Ready), to be made again at it.
fn rolling_update(
    c: &Client<'_>,
    set: &Value,
    pods: &[Value],
    revision: &str,
    start: i64,
    end: i64,
) -> Result<Option<Duration>, ApiError> {
    let strategy = set.pointer("/spec/updateStrategy");
    if strategy.and_then(|s| s["type"].as_str()) == Some("OnDelete") {
        return Ok(None);
    }
    if pods
        .iter()
        .any(|p| !pod_ready(p) || meta::meta_str(p, "deletionTimestamp").is_some())
    {
        return Ok(None);
    }
    let partition = strategy
        .and_then(|s| s.pointer("/rollingUpdate/partition"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let name = meta::name(set);
    for i in (start.max(start + partition)..end).rev() {
        let Some(p) = pods
            .iter()
            .find(|p| ordinal(name, meta::name(p)) == Some(i))
        else {
            continue;
        };
        if pod_revision(p) != revision {
            c.delete(&PODS, p, None)?;
            return Ok(None);
        }
    }
    Ok(None)
}

fn pod_revision(p: &Value) -> &str {
    p.pointer("/metadata/labels")
        .and_then(|l| l.get(REVISION_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Creates member `i` (and its claims) at `revision`.
fn create_member(c: &Client<'_>, set: &Value, i: i64, revision: &str) -> Result<(), ApiError> {
    let ns = meta::namespace(set);
    let set_name = meta::name(set);
    let name = format!("{set_name}-{i}");
    let mut pod = pod_from_template(set, &STATEFULSETS, set_name);
    if let Some(m) = pod["metadata"].as_object_mut() {
        m.remove("generateName");
        m.insert("name".into(), json!(name));
    }
    if !pod["metadata"]["labels"].is_object() {
        pod["metadata"]["labels"] = json!({});
    }
    let labels = &mut pod["metadata"]["labels"];
    labels[REVISION_LABEL] = json!(revision);
    labels["statefulset.kubernetes.io/pod-name"] = json!(name);
    labels["apps.kubernetes.io/pod-index"] = json!(i.to_string());
    pod["spec"]["hostname"] = json!(name);
    if let Some(svc) = set
        .pointer("/spec/serviceName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(svc);
    }
    for claim in set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let claim_name = format!("{}-{name}", meta::name(claim));
        ensure_claim(c, set, claim, &claim_name)?;
        let volumes = &mut pod["spec"]["volumes"];
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        if let Some(vs) = volumes.as_array_mut() {
            vs.retain(|v| v["name"] != meta::name(claim));
            vs.push(json!({"name": meta::name(claim), "persistentVolumeClaim": {"claimName": claim_name}}));
        }
    }
    c.create(&PODS, ns, pod).map(|_| ())
}

/// The claim `name` from `template`, created if missing.
fn ensure_claim(c: &Client<'_>, set: &Value, template: &Value, name: &str) -> Result<(), ApiError> {
    let ns = meta::namespace(set);
    if c.get_value(&PVCS, ns, name).is_some() {
        return Ok(());
    }
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let (Some(l), Some(sel)) = (
        labels.as_object_mut(),
        set.pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object),
    ) {
        l.extend(sel.clone());
    }
    let pvc = json!({"metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
    c.create(&PVCS, ns, pvc).map(|_| ())
}

/// The set's status from its Pods.
fn write_status(
    c: &Client<'_>,
    set: &Value,
    pods: &[Value],
    revision: &str,
) -> Result<(), ApiError> {
    let min_ready = set
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let now = ctrl_clock::now();
    let mut current = set
        .pointer("/status/currentRevision")
        .and_then(Value::as_str)
        .unwrap_or(revision)
        .to_string();
    let count = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count();
    let updated = count(&|p| pod_revision(p) == revision);
    let ready = count(&pod_ready);
    if updated == pods.len() && ready == pods.len() && spec_replicas(set) == pods.len() as i64 {
        current = revision.to_string();
    }
    let mut status = json!({"replicas": pods.len(), "currentRevision": current, "updateRevision": revision,
        "collisionCount": set.pointer("/status/collisionCount").cloned().unwrap_or(json!(0)),
        "availableReplicas": count(&|p| pod_available(p, min_ready, now))});
    put_nonzero(
        &mut status,
        "observedGeneration",
        meta::generation(set).max(0) as usize,
    );
    put_nonzero(&mut status, "readyReplicas", ready);
    put_nonzero(
        &mut status,
        "currentReplicas",
        count(&|p| pod_revision(p) == current),
    );
    put_nonzero(&mut status, "updatedReplicas", updated);
    if set.get("status") == Some(&status) {
        return Ok(());
    }
    c.update(&STATEFULSETS, set, Some("status"), |v| v["status"] = status)
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_the_numeric_suffix() {
        assert_eq!(ordinal("web", "web-0"), Some(0));
        assert_eq!(ordinal("web", "web-12"), Some(12));
        assert_eq!(ordinal("web", "web-x"), None);
        assert_eq!(ordinal("web", "webs-1"), None);
        assert_eq!(ordinal("web", "web-"), None);
    }
}
