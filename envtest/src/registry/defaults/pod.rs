//! Pod and pod-template defaults (upstream's `pkg/apis/core/v1/defaults.go`: `SetDefaults_Pod`,
//! `SetDefaults_PodSpec`, `SetDefaults_Container`, `SetDefaults_Volume`, `SetDefaults_Probe`,
//! ...; walked as `zz_generated.defaults.go` walks them), the Pod strategy's
//! `PrepareForCreate` (`pkg/registry/core/pod/strategy.go`: `status: {phase: Pending,
//! qosClass}` with `qos.GetPodQOS`), and what a default kube-apiserver's admission plugins add
//! to a new Pod (`plugin/pkg/admission/serviceaccount`: `serviceAccountName: default`;
//! `defaulttolerationseconds`: the not-ready / unreachable tolerations; `priority`:
//! `priority: 0`, `preemptionPolicy`). The ServiceAccount token volume is not mounted.
//! Workload templates (`super::workloads`) use [`pod_spec`].

use serde_json::{Value, json};

use super::{each, object, or_set, or_set_str, present};
use crate::api::meta;
use crate::api::quantity::Quantity;

/// Upstream's `DefaultTerminationGracePeriodSeconds`.
pub(crate) const DEFAULT_GRACE: i64 = 30;
/// `ConfigMapVolumeSourceDefaultMode` and its siblings: 0644.
const DEFAULT_MODE: i64 = 0o644;
/// What `DefaultTolerationSeconds` gives the not-ready and unreachable taints.
const TOLERATION_SECONDS: i64 = 300;
/// The container kinds of a PodSpec.
const CONTAINERS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// `SetObjectDefaults_Pod`.
pub(crate) fn pod(obj: &mut Value) {
    let Some(spec) = object(obj, "spec") else {
        return;
    };
    for kind in ["containers", "initContainers"] {
        for c in each(spec, kind) {
            requests_from_limits(c);
        }
    }
    or_set(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        host_network_ports(spec);
    }
    pod_spec(spec);
    mirror_service_account(spec);
}

/// `SetObjectDefaults_PodTemplate`: the template's spec.
pub(crate) fn pod_template(obj: &mut Value) {
    if let Some(t) = object(obj, "template") {
        template(t);
    }
}

/// A `PodTemplateSpec` inside a workload: its spec's defaults.
pub(crate) fn template(t: &mut Value) {
    if let Some(spec) = object(t, "spec") {
        pod_spec(spec);
        mirror_service_account(spec);
    }
}

/// `SetDefaults_PodSpec` and the defaults of everything a PodSpec holds.
pub(crate) fn pod_spec(spec: &mut Value) {
    or_set_str(spec, "dnsPolicy", "ClusterFirst");
    or_set_str(spec, "restartPolicy", "Always");
    or_set(spec, "securityContext", json!({}));
    or_set(spec, "terminationGracePeriodSeconds", json!(DEFAULT_GRACE));
    or_set_str(spec, "schedulerName", "default-scheduler");
    for v in each(spec, "volumes") {
        volume(v);
    }
    for kind in CONTAINERS {
        for c in each(spec, kind) {
            container(c);
        }
    }
}

/// The v1 conversion keeps the deprecated `serviceAccount` equal to `serviceAccountName`
/// (either one given fills the other).
fn mirror_service_account(spec: &mut Value) {
    let name = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| spec.get("serviceAccount").and_then(Value::as_str))
        .unwrap_or("")
        .to_string();
    if !name.is_empty() {
        spec["serviceAccountName"] = json!(name);
        spec["serviceAccount"] = json!(name);
    }
}

/// `SetDefaults_Container` with its ports, env, resources, probes and lifecycle handlers.
fn container(c: &mut Value) {
    if c.get("imagePullPolicy")
        .is_none_or(|p| p.as_str().unwrap_or("").is_empty())
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c["imagePullPolicy"] = json!(policy);
    }
    or_set_str(c, "terminationMessagePath", "/dev/termination-log");
    or_set_str(c, "terminationMessagePolicy", "File");
    or_set(c, "resources", json!({}));
    for p in each(c, "ports") {
        or_set_str(p, "protocol", "TCP");
    }
    for e in each(c, "env") {
        if let Some(f) = present(e, "valueFrom").and_then(|v| present(v, "fieldRef")) {
            or_set_str(f, "apiVersion", "v1");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = present(c, probe) {
            or_set(p, "timeoutSeconds", json!(1));
            or_set(p, "periodSeconds", json!(10));
            or_set(p, "successThreshold", json!(1));
            or_set(p, "failureThreshold", json!(3));
            http_get(p);
        }
    }
    if let Some(l) = present(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = present(l, hook) {
                http_get(h);
            }
        }
    }
}

/// `SetDefaults_HTTPGetAction` of a handler's `httpGet`.
fn http_get(handler: &mut Value) {
    if let Some(h) = present(handler, "httpGet") {
        or_set_str(h, "path", "/");
        or_set_str(h, "scheme", "HTTP");
    }
}

/// The tag of an image reference (`parsers.ParseImageName`): `latest` when it names neither a
/// tag nor a digest, `None` for a digest or an empty reference.
fn image_tag(image: &str) -> Option<&str> {
    if image.is_empty() || image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    Some(last.split_once(':').map_or("latest", |(_, tag)| tag))
}

/// `SetDefaults_Volume` and the defaults of its source.
fn volume(v: &mut Value) {
    let has_source = v
        .as_object()
        .is_some_and(|o| o.iter().any(|(k, x)| k != "name" && !x.is_null()));
    if !has_source {
        v["emptyDir"] = json!({});
    }
    if let Some(h) = present(v, "hostPath") {
        or_set(h, "type", json!(""));
    }
    for src in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = present(v, src) {
            or_set(s, "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if let Some(d) = present(v, "downwardAPI") {
        field_refs(d);
    }
    if let Some(p) = present(v, "projected") {
        for s in each(p, "sources") {
            if let Some(d) = present(s, "downwardAPI") {
                field_refs(d);
            }
            if let Some(t) = present(s, "serviceAccountToken") {
                or_set(t, "expirationSeconds", json!(3600));
            }
        }
    }
    if let Some(spec) = present(v, "ephemeral")
        .and_then(|e| present(e, "volumeClaimTemplate"))
        .and_then(|t| present(t, "spec"))
    {
        or_set(spec, "volumeMode", json!("Filesystem"));
    }
}

/// `SetDefaults_ObjectFieldSelector` of a downward API projection's items.
fn field_refs(d: &mut Value) {
    for item in each(d, "items") {
        if let Some(f) = present(item, "fieldRef") {
            or_set_str(f, "apiVersion", "v1");
        }
    }
}

/// `SetDefaults_Pod`: a container with limits but no request for a resource requests its limit.
fn requests_from_limits(c: &mut Value) {
    let Some(limits) = c
        .pointer("/resources/limits")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let Some(res) = object(c, "resources") else {
        return;
    };
    let Some(req) = object(res, "requests").and_then(Value::as_object_mut) else {
        return;
    };
    for (k, v) in limits {
        req.entry(k).or_insert(v);
    }
}

/// With host networking every container port is also a host port.
fn host_network_ports(spec: &mut Value) {
    for kind in ["containers", "initContainers"] {
        for c in each(spec, kind) {
            for p in each(c, "ports") {
                if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                    && let Some(port) = p.get("containerPort").cloned()
                {
                    p["hostPort"] = port;
                }
            }
        }
    }
}

/// The Pod strategy's `PrepareForCreate` (status `Pending` with its QoS class, the
/// `SchedulingGated` condition of a gated Pod) and the create-time admission defaults.
pub(crate) fn prepare_for_create(obj: &mut Value) {
    let gated = obj
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    let mut status = json!({"phase": "Pending", "qosClass": qos_class(obj)});
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": meta::now(), "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    obj["status"] = status;
    if let Some(spec) = object(obj, "spec") {
        // The ServiceAccount admission plugin names the default account.
        or_set_str(spec, "serviceAccountName", "default");
        mirror_service_account(spec);
        default_tolerations(spec);
        priority(spec);
    }
}

/// `DefaultTolerationSeconds`: tolerate the not-ready and unreachable `NoExecute` taints for
/// 300 s unless the Pod tolerates them already.
fn default_tolerations(spec: &mut Value) {
    let Some(list) = super::object_array(spec, "tolerations") else {
        return;
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            let exists = t.get("operator").and_then(Value::as_str) == Some("Exists");
            (k == key || (k.is_empty() && exists)) && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION_SECONDS}));
        }
    }
}

/// The `Priority` admission plugin: the priority of the Pod's class (the two system classes
/// upstream always has, else 0) and `preemptionPolicy: PreemptLowerPriority`.
fn priority(spec: &mut Value) {
    let class = spec.get("priorityClassName").and_then(Value::as_str);
    let value = match class {
        Some("system-node-critical") => 2_000_001_000,
        Some("system-cluster-critical") => 2_000_000_000,
        _ => 0,
    };
    or_set(spec, "priority", json!(value));
    or_set_str(spec, "preemptionPolicy", "PreemptLowerPriority");
}

/// Upstream's `qos.GetPodQOS`: `BestEffort` without any cpu or memory request or limit,
/// `Guaranteed` when every container limits both and every request equals its limit (sums
/// over all containers), else `Burstable`. Pod-level `resources` decide when given.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    if let Some(r) = spec.get("resources").filter(|r| {
        ["requests", "limits"].iter().any(|k| {
            r.get(*k)
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
        })
    }) {
        return classify([r].into_iter());
    }
    let all = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .map(|c| c.get("resources").unwrap_or(&Value::Null));
    classify(all)
}

/// The QoS class of these `resources` blocks (the containers', or the one pod-level block).
fn classify<'a>(blocks: impl Iterator<Item = &'a Value>) -> &'static str {
    let mut requests: Vec<(&str, Quantity)> = Vec::new();
    let mut limits: Vec<(&str, Quantity)> = Vec::new();
    let mut guaranteed = true;
    for r in blocks {
        add_positive(&mut requests, r.get("requests"));
        let found = add_positive(&mut limits, r.get("limits"));
        if !(found.contains(&"cpu") && found.contains(&"memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let same = requests.len() == limits.len()
        && requests
            .iter()
            .all(|(k, q)| limits.iter().any(|(l, lq)| l == k && lq == q));
    if guaranteed && same {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Adds the positive cpu and memory quantities of a resource list to `sums`; returns the
/// names found.
fn add_positive<'a>(sums: &mut Vec<(&'a str, Quantity)>, list: Option<&'a Value>) -> Vec<&'a str> {
    let mut found = Vec::new();
    let Some(m) = list.and_then(Value::as_object) else {
        return found;
    };
    for (k, v) in m {
        if k != "cpu" && k != "memory" {
            continue;
        }
        let Some(q) = v
            .as_str()
            .and_then(Quantity::parse)
            .or_else(|| v.as_f64().and_then(|f| Quantity::parse(&f.to_string())))
        else {
            continue;
        };
        if !q.is_positive() {
            continue;
        }
        found.push(k.as_str());
        match sums.iter_mut().find(|(n, _)| n == k) {
            Some((_, s)) => *s = s.plus(&q),
            None => sums.push((k.as_str(), q)),
        }
    }
    found
}
