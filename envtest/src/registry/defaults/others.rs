//! The defaults of the remaining built-ins, each from its group's `defaults.go`: core/v1
//! Endpoints, PersistentVolume(Claim), LimitRange, Node (`pkg/apis/core/v1`), RBAC bindings
//! (`pkg/apis/rbac/v1`), admission webhooks and policies (`pkg/apis/admissionregistration/v1`),
//! NetworkPolicy (`pkg/apis/networking/v1`), EndpointSlice (`pkg/apis/discovery/v1`),
//! StorageClass (`pkg/apis/storage/v1`), PriorityClass (`pkg/apis/scheduling/v1`),
//! HorizontalPodAutoscaler (`pkg/apis/autoscaling/v2`) and APIService
//! (`k8s.io/kube-aggregator/pkg/apis/apiregistration/v1`).

use serde_json::{Value, json};

use super::{each, object, or_set, or_set_str, present};

/// `SetDefaults_Endpoints`: ports are TCP.
pub(crate) fn endpoints(obj: &mut Value) {
    for s in each(obj, "subsets") {
        for p in each(s, "ports") {
            or_set_str(p, "protocol", "TCP");
        }
    }
}

/// `SetDefaults_PersistentVolume`: `Pending`, `Retain`, `Filesystem`; a hostPath's type.
pub(crate) fn persistent_volume(obj: &mut Value) {
    if let Some(status) = object(obj, "status") {
        or_set_str(status, "phase", "Pending");
    }
    if let Some(spec) = object(obj, "spec") {
        or_set_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        or_set(spec, "volumeMode", json!("Filesystem"));
        if let Some(h) = present(spec, "hostPath") {
            or_set(h, "type", json!(""));
        }
    }
}

/// `SetDefaults_PersistentVolumeClaim` and `..ClaimSpec`: `Pending`, `Filesystem`.
pub(crate) fn persistent_volume_claim(obj: &mut Value) {
    if let Some(status) = object(obj, "status") {
        or_set_str(status, "phase", "Pending");
    }
    if let Some(spec) = object(obj, "spec") {
        or_set(spec, "volumeMode", json!("Filesystem"));
    }
}

/// `SetDefaults_LimitRangeItem`: a `Container` item's default limit is its max, its default
/// request its default limit, else its min.
pub(crate) fn limit_range(obj: &mut Value) {
    let Some(spec) = present(obj, "spec") else {
        return;
    };
    for item in each(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let max = item.get("max").cloned();
        let min = item.get("min").cloned();
        fill_from(item, "default", max.as_ref());
        let default = item.get("default").cloned();
        fill_from(item, "defaultRequest", default.as_ref());
        fill_from(item, "defaultRequest", min.as_ref());
    }
}

/// Adds to the resource list `o[key]` (created) every resource of `from` it lacks.
fn fill_from(o: &mut Value, key: &str, from: Option<&Value>) {
    let Some(list) = object(o, key).and_then(Value::as_object_mut) else {
        return;
    };
    for (k, v) in from.and_then(Value::as_object).into_iter().flatten() {
        list.entry(k.clone()).or_insert(v.clone());
    }
}

/// `SetDefaults_NodeStatus`: allocatable is the capacity when not given.
pub(crate) fn node(obj: &mut Value) {
    if let Some(status) = present(obj, "status")
        && let Some(cap) = status.get("capacity").cloned()
    {
        or_set(status, "allocatable", cap);
    }
}

/// `SetDefaults_RoleBinding` / `ClusterRoleBinding` and `SetDefaults_Subject`: the RBAC group
/// for the role reference and for User and Group subjects.
pub(crate) fn role_binding(obj: &mut Value) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    if let Some(r) = present(obj, "roleRef") {
        or_set_str(r, "apiGroup", RBAC);
    }
    for s in each(obj, "subjects") {
        if matches!(
            s.get("kind").and_then(Value::as_str),
            Some("User" | "Group")
        ) {
            or_set_str(s, "apiGroup", RBAC);
        }
    }
}

/// `SetDefaults_ValidatingWebhook` of each webhook.
pub(crate) fn validating_webhooks(obj: &mut Value) {
    for w in each(obj, "webhooks") {
        webhook(w);
    }
}

/// `SetDefaults_MutatingWebhook` of each webhook: also `reinvocationPolicy: Never`.
pub(crate) fn mutating_webhooks(obj: &mut Value) {
    for w in each(obj, "webhooks") {
        webhook(w);
        or_set_str(w, "reinvocationPolicy", "Never");
    }
}

/// What both webhook kinds default: `Fail`, `Equivalent`, empty selectors, 10 s, rules of
/// scope `*`, service port 443.
fn webhook(w: &mut Value) {
    or_set_str(w, "failurePolicy", "Fail");
    or_set_str(w, "matchPolicy", "Equivalent");
    or_set(w, "namespaceSelector", json!({}));
    or_set(w, "objectSelector", json!({}));
    or_set(w, "timeoutSeconds", json!(10));
    for r in each(w, "rules") {
        or_set_str(r, "scope", "*");
    }
    if let Some(s) = present(w, "clientConfig").and_then(|c| present(c, "service")) {
        or_set(s, "port", json!(443));
    }
}

/// `SetDefaults_ValidatingAdmissionPolicySpec` and `SetDefaults_MatchResources`.
pub(crate) fn admission_policy(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set_str(spec, "failurePolicy", "Fail");
    if let Some(m) = present(spec, "matchConstraints") {
        match_resources(m);
    }
}

/// A policy binding's `matchResources` (`SetDefaults_MatchResources`).
pub(crate) fn admission_policy_binding(obj: &mut Value) {
    if let Some(m) = present(obj, "spec").and_then(|s| present(s, "matchResources")) {
        match_resources(m);
    }
}

/// `SetDefaults_MatchResources`: `Equivalent`, empty selectors, rules of scope `*`.
fn match_resources(m: &mut Value) {
    or_set_str(m, "matchPolicy", "Equivalent");
    or_set(m, "namespaceSelector", json!({}));
    or_set(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for r in each(m, key) {
            or_set_str(r, "scope", "*");
        }
    }
}

/// `SetDefaults_NetworkPolicy`: `policyTypes` `[Ingress]` (and `Egress` with egress rules);
/// ports are TCP.
pub(crate) fn network_policy(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    let no_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(|a| a.is_empty());
    if no_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        spec["policyTypes"] = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
    }
    for dir in ["ingress", "egress"] {
        for rule in each(spec, dir) {
            for p in each(rule, "ports") {
                or_set_str(p, "protocol", "TCP");
            }
        }
    }
}

/// `SetDefaults_EndpointPort`: name `""`, protocol TCP.
pub(crate) fn endpoint_slice(obj: &mut Value) {
    for p in each(obj, "ports") {
        or_set(p, "name", json!(""));
        or_set_str(p, "protocol", "TCP");
    }
}

/// `SetDefaults_StorageClass`: `Delete`, `Immediate`.
pub(crate) fn storage_class(obj: &mut Value) {
    or_set(obj, "reclaimPolicy", json!("Delete"));
    or_set(obj, "volumeBindingMode", json!("Immediate"));
}

/// `SetDefaults_PriorityClass`: `PreemptLowerPriority`.
pub(crate) fn priority_class(obj: &mut Value) {
    or_set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// `SetDefaults_HorizontalPodAutoscaler` (autoscaling/v2, the storage version): one minimum
/// replica, and the scaling rules a given `behavior` leaves out (`GenerateHPAScaleUpRules`,
/// `GenerateHPAScaleDownRules`).
pub(crate) fn horizontal_pod_autoscaler(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    or_set(spec, "minReplicas", json!(1));
    let Some(b) = present(spec, "behavior") else {
        return;
    };
    if let Some(up) = object(b, "scaleUp") {
        or_set(up, "stabilizationWindowSeconds", json!(0));
        or_set(up, "selectPolicy", json!("Max"));
        or_set(
            up,
            "policies",
            json!([
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ]),
        );
    }
    if let Some(down) = object(b, "scaleDown") {
        or_set(down, "stabilizationWindowSeconds", json!(300));
        or_set(down, "selectPolicy", json!("Max"));
        or_set(
            down,
            "policies",
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// The CSR strategy's `PrepareForCreate`: what the client said of the requester is replaced
/// by the requesting user (`username`, `uid`, `groups`, `extra`).
pub(crate) fn requester(obj: &mut Value, user: Option<&crate::auth::UserInfo>) {
    let Some(spec) = object(obj, "spec").and_then(Value::as_object_mut) else {
        return;
    };
    for k in ["username", "uid", "groups", "extra"] {
        spec.remove(k);
    }
    let Some(u) = user else {
        return;
    };
    spec.insert("username".into(), json!(u.name));
    if !u.uid.is_empty() {
        spec.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        spec.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        spec.insert("extra".into(), json!(u.extra));
    }
}

/// `SetDefaults_ServiceReference`: port 443.
pub(crate) fn api_service(obj: &mut Value) {
    if let Some(s) = present(obj, "spec").and_then(|s| present(s, "service")) {
        or_set(s, "port", json!(443));
    }
}
