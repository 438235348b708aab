//! Printer columns of the workload kinds (deployments, replica sets, stateful sets, daemon
//! sets, jobs, cron jobs), ported from upstream's `pkg/printers/internalversion`.

use serde_json::{Value, json};

use super::super::format::{
    age, arr, at, condition, containers, human_duration, int, label_map, label_selector, or_none, s,
};
use super::{AGE, Column, NAME, col};
const CONTAINERS: &str = "Names of each container in the template.";
const IMAGES: &str = "Images referenced by each container in the template.";

fn template_containers(o: &Value) -> Value {
    json!(containers(o, &["spec", "template"]).0)
}
fn template_images(o: &Value) -> Value {
    json!(containers(o, &["spec", "template"]).1)
}
fn selector(o: &Value) -> Value {
    json!(label_selector(at(o, &["spec", "selector"])))
}
/// `ready/desired` of a workload (`spec.replicas` defaults to 1 upstream, 0 when unset here).
fn ready_of_desired(o: &Value) -> Value {
    json!(format!(
        "{}/{}",
        int(o, &["status", "readyReplicas"]),
        int(o, &["spec", "replicas"])
    ))
}

const WORKLOAD_WIDE: [Column; 3] = [
    col("Containers", "string", CONTAINERS, 1, template_containers),
    col("Images", "string", IMAGES, 1, template_images),
    col("Selector", "string", "Label query over pods.", 1, selector),
];

#[rustfmt::skip]
pub(super) static DEPLOYMENTS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state", 0, ready_of_desired),
    col("Up-to-date", "integer", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", 0, |o| json!(int(o, &["status", "updatedReplicas"]))),
    col("Available", "integer", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", 0, |o| json!(int(o, &["status", "availableReplicas"]))),
    AGE,
    WORKLOAD_WIDE[0],
    WORKLOAD_WIDE[1],
    WORKLOAD_WIDE[2],
];

#[rustfmt::skip]
pub(super) static REPLICA_SETS: &[Column] = &[
    NAME,
    col("Desired", "integer", "Replicas is the number of desired replicas.", 0, |o| json!(int(o, &["spec", "replicas"]))),
    col("Current", "integer", "Replicas is the most recently observed number of replicas.", 0, |o| json!(int(o, &["status", "replicas"]))),
    col("Ready", "integer", "The number of ready replicas for this replica set.", 0, |o| json!(int(o, &["status", "readyReplicas"]))),
    AGE,
    WORKLOAD_WIDE[0],
    WORKLOAD_WIDE[1],
    WORKLOAD_WIDE[2],
];

#[rustfmt::skip]
pub(super) static STATEFUL_SETS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state", 0, ready_of_desired),
    AGE,
    WORKLOAD_WIDE[0],
    WORKLOAD_WIDE[1],
];

#[rustfmt::skip]
pub(super) static DAEMON_SETS: &[Column] = &[
    NAME,
    col("Desired", "integer", "The total number of nodes that should be running the daemon pod.", 0, |o| json!(int(o, &["status", "desiredNumberScheduled"]))),
    col("Current", "integer", "The number of nodes that are running at least one daemon pod.", 0, |o| json!(int(o, &["status", "currentNumberScheduled"]))),
    col("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.", 0, |o| json!(int(o, &["status", "numberReady"]))),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod", 0, |o| json!(int(o, &["status", "updatedNumberScheduled"]))),
    col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.", 0, |o| json!(int(o, &["status", "numberAvailable"]))),
    col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node.", 0, |o| { json!(label_map(at( o, &["spec", "template", "spec", "nodeSelector"] ))) }),
    AGE,
    WORKLOAD_WIDE[0],
    WORKLOAD_WIDE[1],
    WORKLOAD_WIDE[2],
];

#[rustfmt::skip]
pub(super) static JOBS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job.", 0, job_status),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded.",
        0,
        |o| {
            let done = int(o, &["status", "succeeded"]);
            let par = int(o, &["spec", "parallelism"]);
            json!(
                match at(o, &["spec", "completions"]).and_then(Value::as_i64) {
                    Some(c) => format!("{done}/{c}"),
                    None if par > 1 => format!("{done}/1 of {par}"),
                    None => format!("{done}/1"),
                }
            )
        },
    ),
    col(
        "Duration",
        "string",
        "Time required to complete the job.",
        0,
        |o| {
            let ts = |f: &str| {
                s(o, &["status", f])
                    .parse::<k8s_openapi::jiff::Timestamp>()
                    .ok()
            };
            json!(match (ts("startTime"), ts("completionTime")) {
                (None, _) => String::new(),
                (Some(a), Some(b)) => human_duration(b.as_second() - a.as_second()),
                (Some(a), None) =>
                    human_duration(ctrl_clock::now().as_second() - a.as_second()),
            })
        },
    ),
    AGE,
    WORKLOAD_WIDE[0],
    WORKLOAD_WIDE[1],
    WORKLOAD_WIDE[2],
];

fn job_status(o: &Value) -> Value {
    let st = if condition(o, "Complete") == "True" {
        "Complete"
    } else if condition(o, "Failed") == "True" {
        "Failed"
    } else if at(o, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        "Terminating"
    } else if condition(o, "SuccessCriteriaMet") == "True" {
        "SuccessCriteriaMet"
    } else if condition(o, "FailureTarget") == "True" {
        "FailureTarget"
    } else if condition(o, "Suspended") == "True" {
        "Suspended"
    } else {
        "Running"
    };
    json!(st)
}

#[rustfmt::skip]
pub(super) static CRON_JOBS: &[Column] = &[
    NAME,
    col("Schedule", "string", "The schedule in Cron format.", 0, |o| json!(s(o, &["spec", "schedule"]))),
    col("Timezone", "string", "The time zone name for the given schedule.", 0, |o| json!(or_none(s(o, &["spec", "timeZone"])))),
    col("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions.", 0, |o| { json!( at(o, &["spec", "suspend"]) .and_then(Value::as_bool) .unwrap_or(false) ) }),
    col("Active", "integer", "A list of pointers to currently running jobs.", 0, |o| json!(arr(o, &["status", "active"]).len())),
    col(
        "Last Schedule",
        "string",
        "Information when was the last time the job was successfully scheduled.",
        0,
        |o| {
            let t = s(o, &["status", "lastScheduleTime"]);
            json!(if t.is_empty() {
                "<none>".into()
            } else {
                age(t)
            })
        },
    ),
    AGE,
    col("Containers", "string", CONTAINERS, 1, |o| {
        json!(containers(o, &["spec", "jobTemplate", "spec", "template"]).0)
    }),
    col("Images", "string", IMAGES, 1, |o| {
        json!(containers(o, &["spec", "jobTemplate", "spec", "template"]).1)
    }),
    col("Selector", "string", "Label query over pods.", 1, |o| {
        json!(label_selector(at(
            o,
            &["spec", "jobTemplate", "spec", "selector"]
        )))
    }),
];
