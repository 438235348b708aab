//! The EndpointSlice controller (upstream's `pkg/controller/endpointslice/` with
//! `staging/src/k8s.io/endpointslice/reconciler.go`): a Service with a `selector` gets one
//! `discovery.k8s.io/v1` EndpointSlice (`<service>-<5 random>`, labels
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io`, controlled by the Service, `addressType: IPv4`) listing
//! each selected Pod that has an IP — `addresses`, `conditions` (`ready`, `serving`,
//! `terminating`), `nodeName`, `targetRef` — and the Service's ports with their `targetPort`
//! resolved (a number, or a container port's name in the Pods). Services without a selector
//! are left alone, as upstream leaves them to their owners.
//!
//! Differences: one slice per Service however many endpoints (upstream splits at 100), no
//! IPv6, no zone hints, no `endpoints.kubernetes.io/last-change-trigger-time`, and no legacy
//! v1 Endpoints object.

use std::time::Duration;

use serde_json::{Value, json};

use super::client::{self, Client, ENDPOINTSLICES, Key, PODS, SERVICES, pod_ready};
use super::runner::Reconciler;
use crate::api::meta;
use crate::api::status::ApiError;

/// The EndpointSlice controller.
pub(crate) struct EndpointSlices;

const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";

impl Reconciler for EndpointSlices {
    fn name(&self) -> &'static str {
        "endpointslice"
    }

    fn watches(&self) -> Vec<client::Res> {
        vec![SERVICES, PODS, ENDPOINTSLICES]
    }

    /// A Pod concerns the Services of its namespace that select it; a slice, its Service.
    fn keys(&self, c: &Client<'_>, index: usize, obj: &Value) -> Vec<Key> {
        let ns = meta::namespace(obj).to_string();
        match index {
            0 => vec![client::key_of(obj)],
            1 => (c.list_values(&SERVICES, Some(&ns)).iter())
                .filter(|s| selects(s, obj))
                .map(client::key_of)
                .collect(),
            _ => (obj
                .pointer("/metadata/labels")
                .and_then(|l| l.get(SERVICE_NAME))
                .and_then(Value::as_str))
            .map(|s| vec![(ns, s.to_string())])
            .unwrap_or_default(),
        }
    }

    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration> {
        let svc = c.get_value(&SERVICES, &key.0, &key.1)?;
        let selector = svc.pointer("/spec/selector").and_then(Value::as_object);
        if selector.is_none_or(|s| s.is_empty())
            || meta::meta_str(&svc, "deletionTimestamp").is_some()
        {
            return None;
        }
        sync(c, &svc).err().map(|e| {
            tracing::debug!(namespace = %key.0, service = %key.1, error = %e.message, "endpointslice sync failed; retrying");
            Duration::from_millis(100)
        })
    }
}

/// Whether Service `svc` selects Pod `pod` (a map selector, all labels equal).
fn selects(svc: &Value, pod: &Value) -> bool {
    let Some(sel) = svc
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
    else {
        return false;
    };
    let labels = client::labels_of(pod);
    sel.iter()
        .all(|(k, v)| v.as_str() == labels.get(k).map(String::as_str))
}

/// Writes the Service's slice (created if missing) when its endpoints or ports changed.
fn sync(c: &Client<'_>, svc: &Value) -> Result<(), ApiError> {
    let ns = meta::namespace(svc);
    let uid = meta::meta_str(svc, "uid").unwrap_or("");
    let pods: Vec<Value> = (c.list_values(&PODS, Some(ns)).into_iter())
        .filter(|p| selects(svc, p) && p.pointer("/status/podIP").is_some_and(|ip| ip.is_string()))
        .filter(|p| !matches!(client::pod_phase(p), "Succeeded" | "Failed"))
        .collect();
    let endpoints: Vec<Value> = pods.iter().map(endpoint).collect();
    let ports = ports(svc, &pods);
    let slices: Vec<Value> = (c.list_values(&ENDPOINTSLICES, Some(ns)).into_iter())
        .filter(|s| client::controller_ref_value(s).is_some_and(|r| r["uid"] == uid))
        .collect();
    let Some(slice) = slices.first() else {
        let slice = json!({"metadata": {"generateName": format!("{}-", meta::name(svc)),
                "labels": {SERVICE_NAME: meta::name(svc), MANAGED_BY: CONTROLLER},
                "ownerReferences": [client::new_controller_ref(svc, &SERVICES)]},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports});
        return c.create(&ENDPOINTSLICES, ns, slice).map(|_| ());
    };
    for extra in &slices[1..] {
        c.delete(&ENDPOINTSLICES, extra, None)?;
    }
    if slice.get("endpoints").cloned().unwrap_or(json!([])) == json!(endpoints)
        && slice.get("ports").cloned().unwrap_or(json!([])) == json!(ports)
    {
        return Ok(());
    }
    c.update(&ENDPOINTSLICES, slice, None, |v| {
        v["endpoints"] = json!(endpoints);
        v["ports"] = json!(ports);
    })
    .map(|_| ())
}

/// The endpoint of a Pod.
fn endpoint(p: &Value) -> Value {
    let terminating = meta::meta_str(p, "deletionTimestamp").is_some();
    let ready = pod_ready(p) && !terminating;
    let mut e = json!({"addresses": [p.pointer("/status/podIP").cloned().unwrap_or_default()],
        "conditions": {"ready": ready, "serving": pod_ready(p), "terminating": terminating},
        "targetRef": {"kind": "Pod", "name": meta::name(p), "namespace": meta::namespace(p),
            "uid": meta::meta_str(p, "uid").unwrap_or("")}});
    if let Some(n) = p.pointer("/spec/nodeName").filter(|n| n.is_string()) {
        e["nodeName"] = n.clone();
    }
    e
}

/// The Service's ports with `targetPort` resolved against the Pods (upstream's
/// `podutil.FindPort`): a number as is, a name through the first Pod that names it.
fn ports(svc: &Value, pods: &[Value]) -> Vec<Value> {
    let named = |name: &str| {
        pods.iter().find_map(|p| {
            (p.pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten())
            .flat_map(|c| {
                c.get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .find(|cp| cp["name"] == name)
            .and_then(|cp| cp.get("containerPort").cloned())
        })
    };
    (svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|sp| {
        let port = match sp.get("targetPort") {
            Some(Value::String(n)) => named(n)?,
            Some(n @ Value::Number(_)) => n.clone(),
            _ => sp.get("port")?.clone(),
        };
        Some(
            json!({"name": sp.get("name").cloned().unwrap_or(json!("")), "port": port,
                "protocol": sp.get("protocol").cloned().unwrap_or(json!("TCP"))}),
        )
    })
    .collect()
}
