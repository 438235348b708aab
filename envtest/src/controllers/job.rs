//! The Job controller (upstream's `pkg/controller/job/job_controller.go`) with the
//! ttl-after-finished controller (`pkg/controller/ttlafterfinished/`): a Job owns the Pods its
//! selector matches (else those it controls), keeps `parallelism` (1) of them active —
//! no more than `completions` (1 when neither is set) minus the succeeded ones — creates
//! them from its template (`<job>-<5 random>`, the `batch.kubernetes.io/controller-uid` /
//! `job-name` labels) after upstream's back-off (10 s doubling, at most 6 min, after each
//! failure), and counts what the simulated kubelet reports: Pods succeed or fail after their
//! run time (`kubelet::status`). Status as upstream 1.31+: `startTime`, `active`, `ready`,
//! `succeeded`, `failed`, `terminating`, `uncountedTerminatedPods`, `completionTime`, and the
//! conditions: `SuccessCriteriaMet` then, once no Pod is left running, `Complete`
//! (`CompletionsReached`); `FailureTarget` then `Failed` (`BackoffLimitExceeded`: more
//! failures than `backoffLimit` (6); `DeadlineExceeded`: `activeDeadlineSeconds`);
//! `Suspended` (`JobSuspended` / `JobResumed`). A finished Job with `ttlSecondsAfterFinished`
//! is deleted (Foreground) that long after it finished.
//!
//! Not simulated: `Indexed` completion mode, pod failure and success policies,
//! `backoffLimitPerIndex`, `podReplacementPolicy` (failed Pods are replaced at once),
//! the `batch.kubernetes.io/job-tracking` finalizer (finished Pods are counted where they
//! are). Under `OnFailure` the kubelet restarts a failing container in place and its restarts
//! count against `backoffLimit`, as upstream.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::client::{self, Client, JOBS, Key, PODS, parse_time, pod_active, pod_phase, pod_ready};
use super::replicaset::pod_from_template;
use super::runner::Reconciler;
use crate::api::meta;

/// The Job controller.
pub(crate) struct Jobs;

/// Upstream's condition reasons and messages.
const COMPLETIONS_REACHED: (&str, &str) = (
    "CompletionsReached",
    "Reached expected number of succeeded pods",
);
const BACKOFF_LIMIT: (&str, &str) = (
    "BackoffLimitExceeded",
    "Job has reached the specified backoff limit",
);
const DEADLINE: (&str, &str) = (
    "DeadlineExceeded",
    "Job was active longer than specified deadline",
);

impl Reconciler for Jobs {
    fn name(&self) -> &'static str {
        "job"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![JOBS, PODS]
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let job = c.get_value(&JOBS, &key.0, &key.1)?;
        if meta::meta_str(&job, "deletionTimestamp").is_some() {
            return None;
        }
        if let Some(done) = finished_at(&job) {
            return ttl(c, &job, done);
        }
        let pods = owned_pods(c, &job);
        let mut status = job.get("status").cloned().unwrap_or_else(|| json!({}));
        let again = sync(c, &job, &pods, &mut status);
        let pods = owned_pods(c, &job);
        counts(&pods, &mut status);
        terminal(&job, &pods, &mut status);
        if job.get("status") != Some(&status)
            && c.update(&JOBS, &job, Some("status"), |v| v["status"] = status)
                .is_err()
        {
            return Some(Duration::from_millis(50));
        }
        again
    }
}

/// The Pods of the Job's namespace it owns after adoption and release: selected by its
/// selector (which the API server generates from its uid), else controlled by it.
fn owned_pods(c: &Client<'_>, job: &Value) -> Vec<Value> {
    let sel: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> = job
        .pointer("/spec/selector")
        .and_then(|s| serde::Deserialize::deserialize(s).ok());
    let uid = meta::meta_str(job, "uid").unwrap_or("");
    let selects = |p: &Value| match &sel {
        Some(s) if client::selector_usable(Some(s)) => client::selects(Some(s), p),
        _ => client::controller_ref_value(p).is_some_and(|r| r["uid"] == uid),
    };
    let pods = c.list_values(&PODS, Some(meta::namespace(job)));
    client::claim_all(c, &PODS, job, &JOBS, selects, pods)
}

fn spec_i64(job: &Value, field: &str) -> Option<i64> {
    job.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_i64)
}

/// A count of `status` (0 when absent).
fn count(status: &Value, field: &str) -> i64 {
    status.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// Starts, suspends, and sizes the active Pods; when to look again.
fn sync(c: &Client<'_>, job: &Value, pods: &[Value], status: &mut Value) -> Option<Duration> {
    let suspended = job.pointer("/spec/suspend") == Some(&json!(true));
    let active: Vec<&Value> = pods.iter().filter(|p| pod_active(p)).collect();
    suspend_condition(status, suspended);
    if suspended {
        for p in active {
            let _ = c.delete(&PODS, p, None);
        }
        return None;
    }
    if status.get("startTime").is_none_or(Value::is_null) {
        status["startTime"] = json!(meta::now());
    }
    if has_condition(status, "SuccessCriteriaMet") || has_condition(status, "FailureTarget") {
        for p in active {
            let _ = c.delete(&PODS, p, None);
        }
        return None;
    }
    let succeeded = pods.iter().filter(|p| pod_phase(p) == "Succeeded").count() as i64;
    let parallelism = spec_i64(job, "parallelism").unwrap_or(1);
    let want = match spec_i64(job, "completions") {
        Some(n) => parallelism.min(n - succeeded).max(0),
        None if spec_i64(job, "parallelism").is_none() => (1 - succeeded).max(0),
        None if succeeded > 0 => 0,
        None => parallelism,
    };
    let have = active.len() as i64;
    if have > want {
        let mut extra = active.clone();
        extra.sort_by_key(|p| {
            std::cmp::Reverse(
                meta::meta_str(p, "creationTimestamp")
                    .unwrap_or("")
                    .to_string(),
            )
        });
        for p in extra.into_iter().take((have - want) as usize) {
            let _ = c.delete(&PODS, p, None);
        }
        return None;
    }
    if have < want {
        if let Some(wait) = backoff(pods) {
            return Some(wait);
        }
        for _ in have..want {
            let _ = c.create(&PODS, meta::namespace(job), job_pod(job));
        }
    }
    deadline_left(job, status)
}

/// A Pod of the Job: its template with the labels the API server and the controller put on
/// Job Pods.
fn job_pod(job: &Value) -> Value {
    let mut pod = pod_from_template(job, &JOBS, meta::name(job));
    let uid = meta::meta_str(job, "uid").unwrap_or("").to_string();
    if !pod
        .pointer("/metadata/labels")
        .is_some_and(Value::is_object)
    {
        pod["metadata"]["labels"] = json!({});
    }
    let labels = &mut pod["metadata"]["labels"];
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", meta::name(job)),
        ("controller-uid", uid.as_str()),
        ("job-name", meta::name(job)),
    ] {
        if labels.get(k).is_none() {
            labels[k] = json!(v);
        }
    }
    pod
}

/// Upstream's back-off before a new Pod after failures: 10 s doubling per failure, at most
/// 6 min, from the last failure; the time left, if any.
fn backoff(pods: &[Value]) -> Option<Duration> {
    let failed: Vec<&Value> = pods.iter().filter(|p| pod_phase(p) == "Failed").collect();
    let n = u32::try_from(failed.len()).ok().filter(|n| *n > 0)?;
    let last = failed.iter().filter_map(|p| finish_time(p)).max()?;
    let delay = SignedDuration::from_secs(10 * 2i64.pow((n - 1).min(6)))
        .min(SignedDuration::from_secs(360));
    let left = (last + delay).duration_since(ctrl_clock::now());
    (left.is_positive()).then(|| Duration::try_from(left).unwrap_or_default())
}

/// When a finished Pod's last container finished.
fn finish_time(pod: &Value) -> Option<Timestamp> {
    (pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|s| {
        s.pointer("/state/terminated/finishedAt")
            .and_then(Value::as_str)
    })
    .filter_map(parse_time)
    .max()
}

/// How long until `activeDeadlineSeconds` passes, counted from `startTime`.
fn deadline_left(job: &Value, status: &Value) -> Option<Duration> {
    let secs = spec_i64(job, "activeDeadlineSeconds")?;
    let start = status
        .get("startTime")
        .and_then(Value::as_str)
        .and_then(parse_time)?;
    let left = (start + SignedDuration::from_secs(secs)).duration_since(ctrl_clock::now());
    Some(Duration::try_from(left).unwrap_or_default() + Duration::from_millis(50))
}

/// The counts of the Job's Pods (never lower than before: finished Pods may be deleted).
fn counts(pods: &[Value], status: &mut Value) {
    let n = |f: &dyn Fn(&Value) -> bool| pods.iter().filter(|p| f(p)).count() as i64;
    let active = n(&|p| pod_active(p));
    let succeeded = n(&|p| pod_phase(p) == "Succeeded").max(count(status, "succeeded"));
    let failed = n(&|p| pod_phase(p) == "Failed").max(count(status, "failed"));
    let Some(s) = status.as_object_mut() else {
        return;
    };
    for (k, v) in [
        ("active", active),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if v == 0 {
            s.remove(k);
        } else {
            s.insert(k.into(), json!(v));
        }
    }
    s.insert("ready".into(), json!(n(&|p| pod_active(p) && pod_ready(p))));
    let terminating = n(&|p| {
        meta::meta_str(p, "deletionTimestamp").is_some()
            && !matches!(pod_phase(p), "Succeeded" | "Failed")
    });
    s.insert("terminating".into(), json!(terminating));
    s.insert("uncountedTerminatedPods".into(), json!({}));
}

/// The success and failure conditions: the criteria first (`SuccessCriteriaMet`,
/// `FailureTarget`), the terminal condition once no Pod is left running.
fn terminal(job: &Value, pods: &[Value], status: &mut Value) {
    let running = pods
        .iter()
        .any(|p| !matches!(pod_phase(p), "Succeeded" | "Failed"));
    let succeeded = count(status, "succeeded");
    let complete = match spec_i64(job, "completions") {
        Some(n) => succeeded >= n,
        None => succeeded > 0 && !pods.iter().any(pod_active),
    };
    if complete && !has_condition(status, "FailureTarget") {
        set_condition(status, "SuccessCriteriaMet", "True", COMPLETIONS_REACHED);
    }
    let over_deadline = deadline_left(job, status).is_some_and(|d| d <= Duration::from_millis(50));
    let failures = count(status, "failed") + restarts(job, pods);
    let failure = if failures > spec_i64(job, "backoffLimit").unwrap_or(6) {
        Some(BACKOFF_LIMIT)
    } else if over_deadline {
        Some(DEADLINE)
    } else {
        None
    };
    if let Some(why) = failure.filter(|_| !has_condition(status, "SuccessCriteriaMet")) {
        set_condition(status, "FailureTarget", "True", why);
    }
    if running {
        return;
    }
    if has_condition(status, "SuccessCriteriaMet") && !has_condition(status, "Complete") {
        set_condition(status, "Complete", "True", COMPLETIONS_REACHED);
        status["completionTime"] = json!(meta::now());
    }
    if let Some(c) =
        find_condition(status, "FailureTarget").filter(|_| !has_condition(status, "Failed"))
    {
        let reason = c["reason"].as_str().unwrap_or("").to_string();
        let message = c["message"].as_str().unwrap_or("").to_string();
        set_condition(status, "Failed", "True", (&reason, &message));
    }
}

/// Under `restartPolicy: OnFailure`, the container restarts of the active Pods, which count
/// as failures against `backoffLimit` (upstream's `pastBackoffLimitOnFailure`).
fn restarts(job: &Value, pods: &[Value]) -> i64 {
    if job.pointer("/spec/template/spec/restartPolicy") != Some(&json!("OnFailure")) {
        return 0;
    }
    (pods.iter().filter(|p| pod_active(p)))
        .flat_map(|p| {
            let list = |f: &str| {
                p.pointer(&format!("/status/{f}"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            };
            list("containerStatuses")
                .into_iter()
                .chain(list("initContainerStatuses"))
        })
        .filter_map(|s| s["restartCount"].as_i64())
        .sum()
}

/// `Suspended` follows `spec.suspend` (`JobSuspended` / `JobResumed`); resuming restarts
/// the clock of `activeDeadlineSeconds`.
fn suspend_condition(status: &mut Value, suspended: bool) {
    let cur = find_condition(status, "Suspended").map(|c| c["status"] == "True");
    match (suspended, cur) {
        (true, Some(true)) | (false, None) | (false, Some(false)) => {}
        (true, _) => set_condition(
            status,
            "Suspended",
            "True",
            ("JobSuspended", "Job suspended"),
        ),
        (false, Some(true)) => {
            set_condition(status, "Suspended", "False", ("JobResumed", "Job resumed"));
            if let Some(s) = status.as_object_mut() {
                s.remove("startTime");
            }
        }
    }
}

fn find_condition(status: &Value, type_: &str) -> Option<Value> {
    (status.get("conditions").and_then(Value::as_array))
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_).cloned())
}

fn has_condition(status: &Value, type_: &str) -> bool {
    find_condition(status, type_).is_some_and(|c| c["status"] == "True")
}

/// Sets a Job condition (its times now; kept when only the reason changes).
fn set_condition(status: &mut Value, type_: &str, s: &str, (reason, message): (&str, &str)) {
    let now = meta::now();
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(cs) = status["conditions"].as_array_mut() else {
        return;
    };
    let c = json!({"type": type_, "status": s, "lastProbeTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message});
    match cs.iter_mut().find(|c| c["type"] == type_) {
        Some(cur) if cur["status"] == s && cur["reason"] == reason => {}
        Some(cur) => *cur = c,
        None => cs.push(c),
    }
}

/// When a finished Job finished: its `completionTime`, or its `Failed` condition's time.
fn finished_at(job: &Value) -> Option<Timestamp> {
    let status = job.get("status")?;
    if has_condition(status, "Complete") {
        return status
            .get("completionTime")
            .and_then(Value::as_str)
            .and_then(parse_time)
            .or(Some(ctrl_clock::now()));
    }
    let failed = find_condition(status, "Failed").filter(|c| c["status"] == "True")?;
    failed["lastTransitionTime"]
        .as_str()
        .and_then(parse_time)
        .or(Some(ctrl_clock::now()))
}

/// The ttl-after-finished controller: deletes the finished Job (Foreground) once
/// `ttlSecondsAfterFinished` have passed since `done`, else says when to look again.
fn ttl(c: &Client<'_>, job: &Value, done: Timestamp) -> Option<Duration> {
    let secs = spec_i64(job, "ttlSecondsAfterFinished")?;
    let left = (done + SignedDuration::from_secs(secs)).duration_since(ctrl_clock::now());
    if left.is_positive() {
        return Some(Duration::try_from(left).unwrap_or_default() + Duration::from_millis(50));
    }
    match c.delete(&JOBS, job, Some("Foreground")) {
        Ok(()) => None,
        Err(_) => Some(Duration::from_millis(200)),
    }
}
