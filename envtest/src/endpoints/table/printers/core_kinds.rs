//! Printer columns of the core kinds (pods, services, config maps, secrets, namespaces,
//! nodes, events, leases), ported from upstream's `pkg/printers/internalversion`.

use serde_json::{Value, json};

use super::super::format::{age, arr, at, condition, int, label_map, or_none, s};
use super::{AGE, Column, NAME, col};
#[rustfmt::skip]
pub(super) static PODS: &[Column] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
        0,
        |o| {
            let total = arr(o, &["spec", "containers"]).len();
            let ready = arr(o, &["status", "containerStatuses"])
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            json!(format!("{ready}/{total}"))
        },
    ),
    col("Status", "string", "The aggregate status of the containers in this pod.", 0, pod_status),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0,
        |o| {
            let n: i64 = arr(o, &["status", "containerStatuses"])
                .iter()
                .map(|c| int(c, &["restartCount"]))
                .sum();
            json!(n.to_string())
        },
    ),
    AGE,
    col("IP", "string", "IP address allocated to the pod.", 1, |o| {
        json!(or_none(s(o, &["status", "podIP"])))
    }),
    col("Node", "string", "NodeName is the name of the node this pod is scheduled on.", 1, |o| json!(or_none(s(o, &["spec", "nodeName"])))),
    col("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1, |o| json!(or_none(s(o, &["status", "nominatedNodeName"])))),
    col(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness.",
        1,
        |o| {
            let gates = arr(o, &["spec", "readinessGates"]);
            if gates.is_empty() {
                return json!("<none>");
            }
            let met = gates
                .iter()
                .filter(|g| condition(o, s(g, &["conditionType"])) == "True")
                .count();
            json!(format!("{met}/{}", gates.len()))
        },
    ),
];

/// Upstream's pod STATUS: `Terminating`, a container's waiting/terminated reason, the pod's
/// reason, or its phase.
fn pod_status(o: &Value) -> Value {
    if at(o, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        return json!("Terminating");
    }
    let mut reason = s(o, &["status", "reason"]).to_string();
    if reason.is_empty() {
        reason = s(o, &["status", "phase"]).to_string();
    }
    for c in arr(o, &["status", "containerStatuses"]) {
        let r = [
            s(c, &["state", "waiting", "reason"]),
            s(c, &["state", "terminated", "reason"]),
        ]
        .into_iter()
        .find(|r| !r.is_empty());
        if let Some(r) = r {
            reason = r.to_string();
        }
    }
    json!(if reason.is_empty() {
        "Pending".into()
    } else {
        reason
    })
}

#[rustfmt::skip]
pub(super) static SERVICES: &[Column] = &[
    NAME,
    col("Type", "string", "type determines how the Service is exposed.", 0, |o| json!(service_type(o))),
    col("Cluster-IP", "string", "clusterIP is the IP address of the service.", 0, |o| json!(or_none(s(o, &["spec", "clusterIP"])))),
    col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.", 0, service_external_ip),
    col(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service.",
        0,
        |o| {
            let ports: Vec<String> = arr(o, &["spec", "ports"])
                .iter()
                .map(|p| {
                    let proto = match s(p, &["protocol"]) {
                        "" => "TCP",
                        x => x,
                    };
                    match int(p, &["nodePort"]) {
                        0 => format!("{}/{proto}", int(p, &["port"])),
                        np => format!("{}:{np}/{proto}", int(p, &["port"])),
                    }
                })
                .collect();
            json!(or_none(ports.join(",")))
        },
    ),
    AGE,
    col("Selector", "string", "Route service traffic to pods with label keys and values matching this selector.", 1, |o| json!(label_map(at(o, &["spec", "selector"])))),
];

fn service_type(o: &Value) -> &str {
    match s(o, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    }
}

fn service_external_ip(o: &Value) -> Value {
    let external: Vec<&str> = arr(o, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let v = match service_type(o) {
        "ExternalName" => s(o, &["spec", "externalName"]).to_string(),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = arr(o, &["status", "loadBalancer", "ingress"])
                .iter()
                .map(|i| match s(i, &["ip"]) {
                    "" => s(i, &["hostname"]),
                    ip => ip,
                })
                .collect();
            ips.extend(&external);
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        _ => external.join(","),
    };
    json!(or_none(v))
}

fn count(o: &Value, fields: &[&str]) -> Value {
    let n: usize = fields
        .iter()
        .filter_map(|f| o.get(f).and_then(Value::as_object))
        .map(|m| m.len())
        .sum();
    json!(n)
}

#[rustfmt::skip]
pub(super) static CONFIG_MAPS: &[Column] = &[
    NAME,
    col("Data", "string", "Data contains the configuration data.", 0, |o| count(o, &["data", "binaryData"])),
    AGE,
];

#[rustfmt::skip]
pub(super) static SECRETS: &[Column] = &[
    NAME,
    col("Type", "string", "Used to facilitate programmatic handling of secret data.", 0, |o| json!(s(o, &["type"]))),
    col("Data", "string", "Data contains the secret data.", 0, |o| {
        count(o, &["data"])
    }),
    AGE,
];

#[rustfmt::skip]
pub(super) static NAMESPACES: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the namespace", 0, |o| {
        json!(s(o, &["status", "phase"]))
    }),
    AGE,
];

#[rustfmt::skip]
pub(super) static NODES: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node", 0, |o| {
        let mut st = match condition(o, "Ready") {
            "True" => "Ready",
            "" => "Unknown",
            _ => "NotReady",
        }
        .to_string();
        if at(o, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
            st.push_str(",SchedulingDisabled");
        }
        json!(st)
    }),
    col("Roles", "string", "The roles of the node", 0, |o| {
        let mut roles: Vec<&str> = at(o, &["metadata", "labels"])
            .and_then(Value::as_object)
            .map(|m| {
                m.keys()
                    .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                    .filter(|r| !r.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        roles.sort_unstable();
        json!(or_none(roles.join(",")))
    }),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node.", 0, |o| json!(s(o, &["status", "nodeInfo", "kubeletVersion"]))),
    col("Internal-IP", "string", "List of addresses reachable to the node.", 1, |o| node_address(o, "InternalIP")),
    col("External-IP", "string", "List of addresses reachable to the node.", 1, |o| node_address(o, "ExternalIP")),
    col("OS-Image", "string", "OS Image reported by the node from /etc/os-release.", 1, |o| json!(or_none(s(o, &["status", "nodeInfo", "osImage"])))),
    col("Kernel-Version", "string", "Kernel Version reported by the node.", 1, |o| json!(or_none(s(o, &["status", "nodeInfo", "kernelVersion"])))),
    col("Container-Runtime", "string", "ContainerRuntime Version reported by the node.", 1, |o| { json!(or_none(s( o, &["status", "nodeInfo", "containerRuntimeVersion"] ))) }),
];

fn node_address(o: &Value, ty: &str) -> Value {
    let a = arr(o, &["status", "addresses"])
        .iter()
        .find(|a| s(a, &["type"]) == ty);
    json!(or_none(a.map(|a| s(a, &["address"])).unwrap_or("")))
}

/// The first non-empty string among `fields` (core/v1 and events.k8s.io/v1 spell them differently).
fn first<'a>(o: &'a Value, paths: &[&[&str]]) -> &'a str {
    paths
        .iter()
        .map(|p| s(o, p))
        .find(|v| !v.is_empty())
        .unwrap_or("")
}

#[rustfmt::skip]
pub(super) static EVENTS: &[Column] = &[
    col(
        "Last Seen",
        "string",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
        |o| {
            let t = first(
                o,
                &[
                    &["lastTimestamp"],
                    &["deprecatedLastTimestamp"],
                    &["eventTime"],
                    &["firstTimestamp"],
                    &["metadata", "creationTimestamp"],
                ],
            );
            json!(age(t))
        },
    ),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future", 0, |o| json!(s(o, &["type"]))),
    col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", 0, |o| json!(s(o, &["reason"]))),
    col(
        "Object",
        "string",
        "The object that this event is about.",
        0,
        |o| {
            let kind = first(o, &[&["involvedObject", "kind"], &["regarding", "kind"]])
                .to_ascii_lowercase();
            json!(format!(
                "{kind}/{}",
                first(o, &[&["involvedObject", "name"], &["regarding", "name"]])
            ))
        },
    ),
    col("Subobject", "string", "The field path of the object this event is about.", 1, |o| { json!(first( o, &[ &["involvedObject", "fieldPath"], &["regarding", "fieldPath"] ] )) }),
    col(
        "Source",
        "string",
        "The component reporting this event.",
        1,
        |o| {
            let comp = first(
                o,
                &[
                    &["source", "component"],
                    &["deprecatedSource", "component"],
                    &["reportingComponent"],
                    &["reportingController"],
                ],
            );
            let host = first(o, &[&["source", "host"], &["deprecatedSource", "host"]]);
            json!(if host.is_empty() {
                comp.to_string()
            } else {
                format!("{comp}, {host}")
            })
        },
    ),
    col("Message", "string", "A human-readable description of the status of this operation.", 0, |o| json!(first(o, &[&["message"], &["note"]]))),
    col("First Seen", "string", "The time at which the event was first recorded.", 1, |o| { json!(age(first( o, &[ &["firstTimestamp"], &["deprecatedFirstTimestamp"], &["eventTime"] ] ))) }),
    col("Count", "string", "The number of times this event has occurred.", 1, |o| { json!(match int(o, &["count"]).max(int(o, &["deprecatedCount"])) { 0 => 1, n => n, }) }),
    col("Name", "string", "Name must be unique within a namespace.", 1, |o| json!(crate::api::meta::name(o))),
];

#[rustfmt::skip]
pub(super) static LEASES: &[Column] = &[
    NAME,
    col("Holder", "string", "holderIdentity contains the identity of the holder of a current lease.", 0, |o| json!(s(o, &["spec", "holderIdentity"]))),
    AGE,
];
