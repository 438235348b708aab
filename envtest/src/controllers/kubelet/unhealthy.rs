//! What the simulated kubelet writes for the Pod faults a test asks for (`Faults::pod_fault`):
//! containers that crash and are restarted with back-off (`CrashLoopBackOff`, also after an
//! `OOMKilled`), and readiness that flaps — the container statuses and conditions upstream's
//! kubelet reports in those states (`pkg/kubelet/kuberuntime`, `pkg/kubelet/status`). Pure
//! functions over JSON; `super` schedules and writes.

use serde_json::{Value, json};

use crate::api::meta;

/// The names of the Pod's containers.
fn names(pod: &Value) -> Vec<String> {
    (pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|c| c["name"].as_str().map(String::from))
    .collect()
}

/// Sets the `Ready` and `ContainersReady` conditions (and every container's `ready`).
fn set_ready(pod: &Value, status: &mut Value, ready: bool, now: &str) {
    let unready = format!("containers with unready status: [{}]", names(pod).join(" "));
    if let Some(cs) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in cs
            .iter_mut()
            .filter(|c| matches!(c["type"].as_str(), Some("Ready" | "ContainersReady")))
        {
            let mut next = json!({"type": c["type"], "status": if ready { "True" } else { "False" },
                "lastProbeTime": null, "lastTransitionTime": now});
            if !ready {
                next["reason"] = json!("ContainersNotReady");
                next["message"] = json!(unready);
            }
            *c = next;
        }
    }
    for s in status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        s["ready"] = json!(ready);
    }
}

/// The status after the containers crashed once more with `code` / `reason` (`Error`,
/// `OOMKilled`): restarted, backing off, not ready.
pub(crate) fn crashed(pod: &Value, code: i64, reason: &str, now: &str) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let who = format!(
        "{}_{}({})",
        meta::name(pod),
        meta::namespace(pod),
        meta::meta_str(pod, "uid").unwrap_or("")
    );
    for s in status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let started = s
            .pointer("/state/running/startedAt")
            .cloned()
            .unwrap_or_else(|| json!(now));
        let restarts = s["restartCount"].as_i64().unwrap_or(0) + 1;
        let name = s["name"].as_str().unwrap_or("").to_string();
        s["lastState"] = json!({"terminated": {"exitCode": code, "reason": reason,
            "startedAt": started, "finishedAt": now, "containerID": s["containerID"]}});
        s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
            "message": format!("back-off 10s restarting failed container={name} pod={who}")}});
        s["restartCount"] = json!(restarts);
        s["started"] = json!(false);
    }
    set_ready(pod, &mut status, false, now);
    status
}

/// The status with readiness turned the other way.
pub(crate) fn flapped(pod: &Value, now: &str) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let ready = crate::controllers::client::pod_ready(pod);
    set_ready(pod, &mut status, !ready, now);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> Value {
        json!({"metadata": {"name": "p", "namespace": "n", "uid": "u"},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
                "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                    "state": {"running": {"startedAt": "t0"}}}]}})
    }

    #[test]
    fn a_crash_restarts_with_back_off() {
        let s = crashed(&running(), 137, "OOMKilled", "t1");
        let c = &s["containerStatuses"][0];
        assert_eq!(c["restartCount"], 1);
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(c["lastState"]["terminated"]["reason"], "OOMKilled");
        assert_eq!(s["conditions"][0]["status"], "False");
    }

    #[test]
    fn readiness_flaps_both_ways() {
        let mut pod = running();
        pod["status"] = flapped(&pod, "t1");
        assert_eq!(pod["status"]["conditions"][0]["status"], "False");
        pod["status"] = flapped(&pod, "t2");
        assert_eq!(pod["status"]["conditions"][0]["status"], "True");
        assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true);
    }
}
