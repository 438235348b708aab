//! Workload defaults: apps/v1 (`pkg/apis/apps/v1/defaults.go`), batch/v1
//! (`pkg/apis/batch/v1/defaults.go`) and the core/v1 ReplicationController, each with its pod
//! template's defaults (`super::pod::template`), and the Job strategy's generated selector
//! (`pkg/registry/batch/job/strategy.go`, `generateSelector`).

use serde_json::{Value, json};

use super::{each, object, or_set, or_set_str, pod, present};
use crate::api::meta;

/// `SetDefaults_Deployment`: 1 replica, `RollingUpdate` 25 % / 25 %, 10 revisions, 600 s.
pub(crate) fn deployment(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set(spec, "replicas", json!(1));
    if let Some(strategy) = object(spec, "strategy") {
        or_set_str(strategy, "type", "RollingUpdate");
        if strategy["type"] == "RollingUpdate"
            && let Some(ru) = object(strategy, "rollingUpdate")
        {
            or_set(ru, "maxUnavailable", json!("25%"));
            or_set(ru, "maxSurge", json!("25%"));
        }
    }
    or_set(spec, "revisionHistoryLimit", json!(10));
    or_set(spec, "progressDeadlineSeconds", json!(600));
    templated(spec);
}

/// `SetDefaults_ReplicaSet`: 1 replica.
pub(crate) fn replica_set(obj: &mut Value) {
    if let Some(spec) = object(obj, "spec") {
        or_set(spec, "replicas", json!(1));
        templated(spec);
    }
}

/// `SetDefaults_StatefulSet`: `OrderedReady`, `RollingUpdate` with partition 0, PVC
/// retention `Retain` / `Retain`, 1 replica, 10 revisions; claim templates as PVCs.
pub(crate) fn stateful_set(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = object(spec, "updateStrategy") {
        if us
            .get("type")
            .is_none_or(|t| t.as_str().unwrap_or("").is_empty())
        {
            us["type"] = json!("RollingUpdate");
            or_set(us, "rollingUpdate", json!({}));
        }
        if us["type"] == "RollingUpdate"
            && let Some(ru) = present(us, "rollingUpdate")
        {
            or_set(ru, "partition", json!(0));
        }
    }
    if let Some(p) = object(spec, "persistentVolumeClaimRetentionPolicy") {
        or_set_str(p, "whenDeleted", "Retain");
        or_set_str(p, "whenScaled", "Retain");
    }
    or_set(spec, "replicas", json!(1));
    or_set(spec, "revisionHistoryLimit", json!(10));
    for claim in each(spec, "volumeClaimTemplates") {
        super::others::persistent_volume_claim(claim);
    }
    templated(spec);
}

/// `SetDefaults_DaemonSet`: `RollingUpdate` with maxUnavailable 1, maxSurge 0; 10 revisions.
pub(crate) fn daemon_set(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    if let Some(us) = object(spec, "updateStrategy") {
        or_set_str(us, "type", "RollingUpdate");
        if us["type"] == "RollingUpdate"
            && let Some(ru) = object(us, "rollingUpdate")
        {
            or_set(ru, "maxUnavailable", json!(1));
            or_set(ru, "maxSurge", json!(0));
        }
    }
    or_set(spec, "revisionHistoryLimit", json!(10));
    templated(spec);
}

/// `SetDefaults_Job`: completions and parallelism 1 (parallelism alone when completions are
/// given), backoffLimit 6 (the largest int32 with a per-index limit), the template's labels
/// as the Job's when it has none, `NonIndexed`, not suspended, `podReplacementPolicy`
/// (`Failed` with a pod failure policy, else `TerminatingOrFailed`).
pub(crate) fn job(obj: &mut Value) {
    let labels = obj.pointer("/spec/template/metadata/labels").cloned();
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    if spec.get("completions").is_none_or(Value::is_null)
        && spec.get("parallelism").is_none_or(Value::is_null)
    {
        spec["completions"] = json!(1);
    }
    or_set(spec, "parallelism", json!(1));
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    or_set(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    or_set_str(spec, "completionMode", "NonIndexed");
    or_set(spec, "suspend", json!(false));
    let with_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    let replacement = if with_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    or_set_str(spec, "podReplacementPolicy", replacement);
    templated(spec);
    copy_template_labels(obj, labels);
}

/// The template's labels become the object's when it has none (Job, ReplicationController).
fn copy_template_labels(obj: &mut Value, labels: Option<Value>) {
    let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) else {
        return;
    };
    let own = obj.pointer("/metadata/labels").and_then(Value::as_object);
    if own.is_none_or(|m| m.is_empty()) {
        meta::set_meta(obj, "labels", labels);
    }
}

/// `SetDefaults_CronJob`: `Allow`, not suspended, 3 successful and 1 failed Jobs kept; the Job
/// template's spec defaulted as a Job's.
pub(crate) fn cron_job(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set_str(spec, "concurrencyPolicy", "Allow");
    or_set(spec, "suspend", json!(false));
    or_set(spec, "successfulJobsHistoryLimit", json!(3));
    or_set(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(jt) = object(spec, "jobTemplate") {
        let mut job_like = json!({"spec": jt.get("spec").cloned().unwrap_or(json!({}))});
        job(&mut job_like);
        jt["spec"] = job_like["spec"].take();
    }
}

/// `SetDefaults_ReplicationController`: the template's labels as the selector and the
/// object's labels when they are empty; 1 replica.
pub(crate) fn replication_controller(obj: &mut Value) {
    let labels = obj.pointer("/spec/template/metadata/labels").cloned();
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set(spec, "replicas", json!(1));
    if let Some(l) = labels.clone().filter(Value::is_object)
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
    {
        spec["selector"] = l;
    }
    templated(spec);
    copy_template_labels(obj, labels);
}

/// The pod template of a workload's spec, when it has one.
fn templated(spec: &mut Value) {
    if let Some(t) = present(spec, "template") {
        pod::template(t);
    }
}

/// The Job strategy's `generateSelector` (unless `manualSelector`): the template is labelled
/// with the Job's uid and name (both the `batch.kubernetes.io/` and the legacy keys) and the
/// selector matches the uid.
pub(crate) fn generate_job_selector(obj: &mut Value) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = meta::meta_str(obj, "uid").unwrap_or("").to_string();
    let name = meta::name(obj).to_string();
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    let labels = object(spec, "template")
        .and_then(|t| object(t, "metadata"))
        .and_then(|m| object(m, "labels"))
        .and_then(Value::as_object_mut);
    if let Some(l) = labels {
        l.entry("controller-uid").or_insert(json!(uid));
        l.entry("batch.kubernetes.io/controller-uid")
            .or_insert(json!(uid));
        l.entry("job-name").or_insert(json!(name));
        l.entry("batch.kubernetes.io/job-name")
            .or_insert(json!(name));
    }
    if let Some(sel) = object(spec, "selector") {
        let m = object(sel, "matchLabels").and_then(Value::as_object_mut);
        if let Some(m) = m {
            m.entry("batch.kubernetes.io/controller-uid")
                .or_insert(json!(uid));
        }
    }
}
