//! The Deployment controller's helpers (upstream's `pkg/controller/deployment/util/deployment_util.go`
//! and `pkg/controller/controller_utils.go`): the pod-template-hash, revisions and the
//! annotations a ReplicaSet carries, maxSurge / maxUnavailable, conditions and the status
//! computed from the ReplicaSets (`calculateStatus`). Pure functions over JSON objects.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus};
use k8s_openapi::jiff::SignedDuration;
use serde_json::{Value, json};

use crate::api::meta;
use crate::controllers::client::{int_or_percent, now_time};

pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
pub(crate) const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub(crate) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub(crate) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub(crate) const HASH_LABEL: &str = "pod-template-hash";

/// Annotations of a Deployment that its ReplicaSets do not copy.
const SKIP_COPY: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// `rand.SafeEncodeString`'s alphabet (no vowels, no look-alikes).
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The pod-template-hash of a template and collision count (upstream's `ComputeHash`: the
/// FNV-1a 32-bit hash of the template, then of the little-endian count, rendered in decimal
/// through `SafeEncodeString`). The template is hashed as its [`canonical`] JSON (sorted keys)
/// where upstream hashes Go's `%#v` dump of the struct, so the value differs from a real
/// cluster's for the same template; it is as stable and as collision-free.
pub(crate) fn compute_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    feed(canonical(template).to_string().as_bytes());
    if let Some(n) = collision_count {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(n as u32).to_le_bytes());
        feed(&b);
    }
    h.to_string()
        .bytes()
        .map(|d| char::from(SAFE[usize::from(d) % SAFE.len()]))
        .collect()
}

/// A template without the pod-template-hash label (upstream's `EqualIgnoreHash` compares
/// these), in the canonical form of [`canonical`].
pub(crate) fn without_hash(template: &Value) -> Value {
    let mut t = canonical(template);
    if let Some(l) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        l.remove(HASH_LABEL);
        if l.is_empty()
            && let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("labels");
        }
    }
    t
}

/// `v` without nulls, empty objects and empty lists, at any depth: what decoding into Go's
/// types and encoding again does to a template (kubectl's `rollout undo` sends Go's encoding,
/// with `creationTimestamp: null` and `resources: {}`), so equal templates compare and hash
/// equal.
pub(crate) fn canonical(v: &Value) -> Value {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), canonical(v)))
                .filter(|(_, v)| !empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        _ => v.clone(),
    }
}

/// An annotation of a JSON object.
pub(crate) fn annotation<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Sets annotation `key` of `obj`; whether it changed.
pub(crate) fn set_annotation(obj: &mut Value, key: &str, value: &str) -> bool {
    if annotation(obj, key) == Some(value) {
        return false;
    }
    let m = meta::meta_mut(obj);
    if !m.get("annotations").is_some_and(Value::is_object) {
        m.insert("annotations".into(), json!({}));
    }
    m["annotations"][key] = json!(value);
    true
}

/// A ReplicaSet's revision (0 when missing or not a number).
pub(crate) fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// `spec.replicas` of a workload (upstream defaults it to 1).
pub(crate) fn spec_replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// A `status` count of a workload.
pub(crate) fn status_count(obj: &Value, field: &str) -> i64 {
    obj.pointer(&format!("/status/{field}"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether the Deployment rolls by `RollingUpdate` (the default strategy).
pub(crate) fn rolling(d: &Value) -> bool {
    d.pointer("/spec/strategy/type").and_then(Value::as_str) != Some("Recreate")
}

/// maxSurge and maxUnavailable resolved against the replicas (upstream's `ResolveFenceposts`:
/// surge rounds up, unavailable down; both zero makes unavailable 1). 25 % each by default.
fn fenceposts(d: &Value) -> (i64, i64) {
    let r = spec_replicas(d);
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), r, true, "25%");
    let unavailable = int_or_percent(ru.and_then(|r| r.get("maxUnavailable")), r, false, "25%");
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// Upstream's `MaxSurge`: 0 unless rolling.
pub(crate) fn max_surge(d: &Value) -> i64 {
    if rolling(d) { fenceposts(d).0 } else { 0 }
}

/// Upstream's `MaxUnavailable`: 0 unless rolling with replicas, at most the replicas.
pub(crate) fn max_unavailable(d: &Value) -> i64 {
    let r = spec_replicas(d);
    if !rolling(d) || r == 0 {
        return 0;
    }
    fenceposts(d).1.min(r)
}

/// Sets the desired-replicas and max-replicas annotations; whether they changed.
pub(crate) fn set_replicas_annotations(rs: &mut Value, d: &Value) -> bool {
    let r = spec_replicas(d);
    let a = set_annotation(rs, DESIRED_REPLICAS, &r.to_string());
    let b = set_annotation(rs, MAX_REPLICAS, &(r + max_surge(d)).to_string());
    a || b
}

/// Upstream's `SetNewReplicaSetAnnotations`: copies the Deployment's annotations, raises the
/// revision to `new_revision` (keeping the old one in `revision-history`: a rollback), and
/// for a ReplicaSet about to be created sets the replicas annotations. Whether anything
/// changed.
pub(crate) fn set_new_rs_annotations(
    d: &Value,
    rs: &mut Value,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_annotations(d, rs);
    let old = annotation(rs, REVISION).map(String::from);
    let old_n: i64 = match old.as_deref() {
        None | Some("") => 0,
        Some(s) => match s.parse() {
            Ok(n) => n,
            Err(_) => return false,
        },
    };
    if old_n < new_revision {
        changed |= set_annotation(rs, REVISION, &new_revision.to_string());
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            let history = match annotation(rs, REVISION_HISTORY).filter(|h| !h.is_empty()) {
                Some(h) => format!("{h},{old}"),
                None => old,
            };
            set_annotation(rs, REVISION_HISTORY, &history);
        }
    }
    if !exists {
        changed |= set_replicas_annotations(rs, d);
    }
    changed
}

/// Copies the Deployment's own annotations onto the ReplicaSet; whether any changed.
fn copy_annotations(d: &Value, rs: &mut Value) -> bool {
    let Some(a) = d
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        return false;
    };
    let mut changed = false;
    for (k, v) in a.iter().filter(|(k, _)| !SKIP_COPY.contains(&k.as_str())) {
        changed |= set_annotation(rs, k, v.as_str().unwrap_or(""));
    }
    changed
}

/// A new condition at now (upstream's `NewDeploymentCondition`).
pub(crate) fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
) -> DeploymentCondition {
    let now = now_time();
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// The condition of `type_`.
pub(crate) fn get_condition<'s>(
    s: &'s DeploymentStatus,
    type_: &str,
) -> Option<&'s DeploymentCondition> {
    s.conditions.iter().flatten().find(|c| c.type_ == type_)
}

/// Upstream's `SetDeploymentCondition`: nothing when one of the same status and reason is
/// there; the transition time kept when only the reason changes.
pub(crate) fn set_condition(s: &mut DeploymentStatus, mut c: DeploymentCondition) {
    if let Some(cur) = get_condition(s, &c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    remove_condition(s, &c.type_.clone());
    s.conditions.get_or_insert_with(Vec::new).push(c);
}

/// Removes the condition of `type_`.
pub(crate) fn remove_condition(s: &mut DeploymentStatus, type_: &str) {
    if let Some(cs) = s.conditions.as_mut() {
        cs.retain(|c| c.type_ != type_);
    }
}

/// Whether the Deployment has a progress deadline (unset means upstream's default, 600 s;
/// `2147483647` means none).
pub(crate) fn progress_deadline(d: &Deployment) -> Option<i64> {
    let s = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600);
    (s != i32::MAX).then_some(i64::from(s))
}

/// Upstream's `DeploymentComplete`.
pub(crate) fn complete(d: &Deployment, replicas: i64, s: &DeploymentStatus) -> bool {
    let n = |x: Option<i32>| i64::from(x.unwrap_or(0));
    n(s.updated_replicas) == replicas
        && n(s.replicas) == replicas
        && n(s.available_replicas) == replicas
        && s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Upstream's `DeploymentProgressing`: more updated, fewer old, more ready or available.
pub(crate) fn progressing(old: &DeploymentStatus, new: &DeploymentStatus) -> bool {
    let n = |x: Option<i32>| i64::from(x.unwrap_or(0));
    let old_old = n(old.replicas) - n(old.updated_replicas);
    let new_old = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// How long until the Progressing condition's deadline (upstream's `DeploymentTimedOut`
/// and `requeueStuckDeployment`): `None` without a deadline or once complete or timed out,
/// a zero or negative duration when it has passed.
pub(crate) fn until_deadline(d: &Deployment, s: &DeploymentStatus) -> Option<SignedDuration> {
    let deadline = progress_deadline(d)?;
    let c = get_condition(s, "Progressing")?;
    if matches!(
        c.reason.as_deref(),
        Some("NewReplicaSetAvailable" | "ProgressDeadlineExceeded")
    ) {
        return None;
    }
    let from = c.last_update_time.as_ref()?.0;
    Some((from + SignedDuration::from_secs(deadline)).duration_since(ctrl_clock::now()))
}

/// The replica counts of the ReplicaSets (upstream's `calculateStatus`, counts only; Go's
/// `omitempty` drops the zeros).
pub(crate) fn counts(d: &Value, all: &[&Value], new: Option<&Value>, s: &mut DeploymentStatus) {
    let sum = |rss: &[&Value], f: &dyn Fn(&Value) -> i64| rss.iter().map(|r| f(r)).sum::<i64>();
    let nz = |n: i64| (n != 0).then(|| i32::try_from(n).unwrap_or(i32::MAX));
    let available = sum(all, &|r| status_count(r, "availableReplicas"));
    let total = sum(all, &|r| spec_replicas(r));
    s.observed_generation = Some(meta::generation(d)).filter(|g| *g != 0);
    s.replicas = nz(sum(all, &|r| status_count(r, "replicas")));
    s.updated_replicas = nz(new.map_or(0, |r| status_count(r, "replicas")));
    s.ready_replicas = nz(sum(all, &|r| status_count(r, "readyReplicas")));
    s.available_replicas = nz(available);
    s.unavailable_replicas = nz((total - available).max(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_safe_encoded_and_follows_the_collision_count() {
        let t = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let h = compute_hash(&t, None);
        assert!(!h.is_empty() && h.bytes().all(|b| SAFE.contains(&b)), "{h}");
        assert_eq!(h, compute_hash(&t, None));
        assert_ne!(h, compute_hash(&t, Some(1)));
    }

    #[test]
    fn fenceposts_resolve_as_upstream() {
        let d = |s: Value| json!({"spec": {"replicas": 4, "strategy": s}});
        assert_eq!(max_surge(&d(json!({}))), 1);
        assert_eq!(max_unavailable(&d(json!({}))), 1);
        let zero = json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
        assert_eq!(max_unavailable(&d(zero)), 1);
        assert_eq!(max_surge(&d(json!({"type": "Recreate"}))), 0);
    }

    #[test]
    fn a_rollback_keeps_the_old_revision_in_the_history() {
        let d = json!({"spec": {"replicas": 2}, "metadata": {"annotations": {"a": "b", REVISION: "2"}}});
        let mut rs = json!({"metadata": {"annotations": {REVISION: "1"}}});
        assert!(set_new_rs_annotations(&d, &mut rs, 3, true));
        assert_eq!(annotation(&rs, REVISION), Some("3"));
        assert_eq!(annotation(&rs, REVISION_HISTORY), Some("1"));
        assert_eq!(annotation(&rs, "a"), Some("b"));
        assert!(!set_new_rs_annotations(&d, &mut rs, 3, true));
    }
}
