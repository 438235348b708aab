//! What the simulated kubelet writes into a Pod: the `PodScheduled` condition of a binding,
//! the status of running containers and of containers that exited (upstream's
//! `pkg/kubelet/status/generate.go` conditions and reasons), and what a Pod's spec and
//! annotations tell it — which Node it wants (node affinity on `metadata.name`, the
//! `kubernetes.io/hostname` node selector), whether it runs to completion
//! (`restartPolicy` `Never` / `OnFailure`), for how long ([`RUN_SECONDS`]) and with which
//! exit code ([`EXIT_CODE`]). Pure functions over JSON; `super` does the writes.

use std::time::Duration;

use serde_json::{Value, json};

use crate::api::meta;

/// Annotation: the exit code of a Pod's containers when it runs to completion (default 0;
/// non-zero fails the Pod).
pub(crate) const EXIT_CODE: &str = "envtest.ctrl/exit-code";

/// Annotation: how long (seconds, fractions allowed) a Pod that runs to completion runs
/// (default `EnvironmentBuilder::pod_run_time`).
pub(crate) const RUN_SECONDS: &str = "envtest.ctrl/run-seconds";

/// A Pod condition of `type_` and `status` that changed at `now`, with an optional reason.
fn cond(type_: &str, status: &str, reason: Option<&str>, now: &str) -> Value {
    let mut c =
        json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    c
}

/// A `True` Pod condition that changed at `now`.
pub(crate) fn condition(type_: &str, now: &str) -> Value {
    cond(type_, "True", None, now)
}

/// Sets (or replaces) the Pod condition of `c`'s type in `pod.status.conditions`.
pub(crate) fn set_condition(pod: &mut Value, c: Value) {
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    let status = &mut pod["status"];
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    if let Some(cs) = status["conditions"].as_array_mut() {
        cs.retain(|x| x["type"] != c["type"]);
        cs.push(c);
    }
}

/// The Node the Pod asks for among `nodes`: a required node affinity term matching the
/// field `metadata.name`, or the `kubernetes.io/hostname` node selector.
pub(crate) fn wanted_node(pod: &Value, nodes: &[String]) -> Option<String> {
    let terms = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    let by_field = terms.into_iter().flatten().find_map(|t| {
        let fields = t.get("matchFields").and_then(Value::as_array)?;
        fields.iter().find_map(|f| {
            let values = f.get("values").and_then(Value::as_array)?;
            (f["key"] == "metadata.name" && f["operator"] == "In")
                .then(|| values.iter().find_map(|v| nodes.iter().find(|n| *n == v)))?
        })
    });
    let by_label = || {
        let want = pod.pointer("/spec/nodeSelector/kubernetes.io~1hostname")?;
        nodes.iter().find(|n| *n == want)
    };
    by_field.or_else(by_label).cloned()
}

/// Whether the Pod's containers exit by themselves (`restartPolicy` other than `Always`).
pub(crate) fn runs_to_completion(pod: &Value) -> bool {
    matches!(
        pod.pointer("/spec/restartPolicy").and_then(Value::as_str),
        Some("Never" | "OnFailure")
    )
}

/// How long a Pod that runs to completion runs: its [`RUN_SECONDS`] annotation, else
/// `default`.
pub(crate) fn run_time(pod: &Value, default: Duration) -> Duration {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(RUN_SECONDS))
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(default)
}

/// The exit code of a Pod's containers: its [`EXIT_CODE`] annotation, else 0.
pub(crate) fn exit_code(pod: &Value) -> i64 {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(EXIT_CODE))
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The containers (or init containers) of the Pod's spec.
fn containers(pod: &Value, path: &str) -> Vec<Value> {
    pod.pointer(path)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A container status of container `c` in `state`.
fn container_status(pod: &Value, c: &Value, state: Value, ready: bool) -> Value {
    let uid = meta::meta_str(pod, "uid").unwrap_or("");
    let short = uid.get(..8).unwrap_or(uid);
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    json!({"name": name, "image": image, "imageID": format!("envtest://{image}"),
        "containerID": format!("envtest://{short}-{name}"), "ready": ready, "started": ready,
        "restartCount": 0, "state": state})
}

/// The Pod's `PodScheduled` condition, kept from the binding.
fn scheduled(pod: &Value, now: &str) -> Value {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| condition("PodScheduled", now))
}

/// The status of a running Pod: every container started and ready, init containers done.
pub(crate) fn running(pod: &Value, ip: &str, host_ip: &str, now: &str) -> Value {
    let running = json!({"running": {"startedAt": now}});
    let done = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}});
    let qos = pod
        .pointer("/status/qosClass")
        .cloned()
        .unwrap_or_else(|| json!("BestEffort"));
    let statuses = |path: &str, state: &Value, ready: bool| -> Vec<Value> {
        (containers(pod, path).iter())
            .map(|c| container_status(pod, c, state.clone(), ready))
            .collect()
    };
    let mut status = json!({
        "phase": "Running",
        "conditions": [condition("PodReadyToStartContainers", now), condition("Initialized", now),
            condition("Ready", now), condition("ContainersReady", now), scheduled(pod, now)],
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": qos,
        "containerStatuses": statuses("/spec/containers", &running, true),
    });
    let inits = statuses("/spec/initContainers", &done, false);
    if !inits.is_empty() {
        status["initContainerStatuses"] = json!(inits);
    }
    status
}

/// The status of a Pod whose containers exited with `code`: `Succeeded` (0) or `Failed`,
/// not ready (`PodCompleted` / `PodFailed`), each container `terminated`.
pub(crate) fn finished(pod: &Value, code: i64, now: &str) -> Value {
    let (phase, reason, why) = if code == 0 {
        ("Succeeded", "Completed", "PodCompleted")
    } else {
        ("Failed", "Error", "PodFailed")
    };
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    status["phase"] = json!(phase);
    let mut statuses = containers(pod, "/spec/containers");
    for (i, c) in statuses.iter_mut().enumerate() {
        let started = pod
            .pointer(&format!(
                "/status/containerStatuses/{i}/state/running/startedAt"
            ))
            .cloned()
            .unwrap_or_else(|| json!(now));
        let state = json!({"terminated": {"exitCode": code, "reason": reason,
            "startedAt": started, "finishedAt": now}});
        *c = container_status(pod, c, state, false);
    }
    status["containerStatuses"] = json!(statuses);
    status["conditions"] = json!([
        cond("PodReadyToStartContainers", "False", None, now),
        condition("Initialized", now),
        cond("Ready", "False", Some(why), now),
        cond("ContainersReady", "False", Some(why), now),
        scheduled(pod, now),
    ]);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_pod_gets_the_node_its_affinity_names() {
        let nodes = vec!["a".to_string(), "b".to_string()];
        let pod = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}});
        assert_eq!(wanted_node(&pod, &nodes).as_deref(), Some("b"));
        let pod = json!({"spec": {"nodeSelector": {"kubernetes.io/hostname": "a"}}});
        assert_eq!(wanted_node(&pod, &nodes).as_deref(), Some("a"));
        assert_eq!(wanted_node(&json!({"spec": {}}), &nodes), None);
    }

    #[test]
    fn a_failing_pod_fails_with_its_exit_code() {
        let pod = json!({"metadata": {"uid": "0123456789", "annotations": {EXIT_CODE: "3"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
        assert!(runs_to_completion(&pod));
        let s = finished(&pod, exit_code(&pod), "2026-01-01T00:00:00Z");
        assert_eq!(s["phase"], "Failed");
        assert_eq!(
            s["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            3
        );
    }
}
