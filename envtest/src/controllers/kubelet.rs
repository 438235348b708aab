//! The simulated kubelet (opt-in: `EnvironmentBuilder::simulate_pods`), a scheduler and a
//! kubelet in miniature, as kwok gives a real cluster: one Node ([`NODE_NAME`]) is created at
//! start; a Pod that is created is bound to it (`spec.nodeName`, `PodScheduled`, phase
//! `Pending`) and, after the start delay, reported running (phase `Running`, `Initialized` /
//! `Ready` / `ContainersReady` / `PodScheduled` conditions, `podIP`, `hostIP`, `startTime`,
//! container statuses). Containers never exit on their own.
//!
//! Deletion follows upstream's pod strategy: a DELETE of a Pod that is bound and not finished marks
//! it (`deletionTimestamp` = now + grace, `deletionGracePeriodSeconds`) instead of removing it, the
//! grace coming from the DeleteOptions, else `spec.terminationGracePeriodSeconds`, else 30 s
//! (negative means 1; grace 0, an unbound or a finished Pod go at once) — the pods strategy of the
//! registry's delete
//! ([`registry::strategy::pod_graceful_delete`](crate::registry::strategy::pod_graceful_delete))
//! does that when the kubelet is on. The kubelet treats containers as stopping quickly: it deletes
//! a marked Pod with grace 0 after min(grace, stop delay), which removes it (or, with finalizers,
//! leaves it to them).
//!
//! Like `gc` and `namespaces` it is a client of the registry, not of HTTP: it watches the pods
//! collection through `Store::watch` (re-subscribing with a full re-evaluation if its stream is
//! dropped) and writes through [`registry::hooks`](crate::registry::hooks), so every step is an
//! ordinary write with a resourceVersion and a watch event. It stops with the server.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::api::meta;
use crate::api::status::ApiError;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks;
use crate::registry::rest::DeleteOpts;
use crate::registry::strategy::{finished, node_name, phase};
use crate::storage::Start;

/// The simulated Node every Pod is bound to.
pub const NODE_NAME: &str = "envtest-node";

/// The simulated Node's `InternalIP`, every running Pod's `hostIP`.
const NODE_IP: &str = "10.0.0.10";

pub(crate) use crate::registry::context::KubeletConfig as Config;

fn pod_type(api: &Apiserver) -> Option<Arc<ResourceType>> {
    api.registry.snapshot().get("", "v1", "pods").cloned()
}

/// The running kubelet's bookkeeping: Pods (by uid) with a start or stop already pending,
/// and the next Pod IP.
struct Kubelet {
    api: Arc<Apiserver>,
    shutdown: CancellationToken,
    cfg: Config,
    rt: Arc<ResourceType>,
    starting: Mutex<HashSet<String>>,
    stopping: Mutex<HashSet<String>>,
    next_ip: AtomicU32,
}

/// Creates the simulated Node and starts the kubelet task (until the server shuts down).
pub(crate) fn start(api: &Arc<Apiserver>, shutdown: CancellationToken, cfg: Config) {
    create_node(api);
    let Some(rt) = pod_type(api) else {
        return;
    };
    let kubelet = Arc::new(Kubelet {
        api: api.clone(),
        shutdown,
        cfg,
        rt,
        starting: Mutex::new(HashSet::new()),
        stopping: Mutex::new(HashSet::new()),
        next_ip: AtomicU32::new(2),
    });
    tokio::spawn(kubelet.run());
}

/// The Node object: Ready, with an address, capacity and node info.
fn create_node(api: &Arc<Apiserver>) {
    let Some(rt) = api.registry.snapshot().get("", "v1", "nodes").cloned() else {
        return;
    };
    let now = meta::now();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE_NAME, "labels": {
            "kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": "linux", "type": "envtest"}},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "simulated kubelet is posting ready status",
                "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE_NAME}],
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "1000"},
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "1000"},
            "nodeInfo": {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "envtest://simulated",
                "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "v1.33.0-envtest",
                "machineID": "", "operatingSystem": "linux", "osImage": "ctrl-envtest simulated node",
                "systemUUID": ""}
        }
    });
    if let Err(e) = hooks::create_object(api, &rt, None, node, Default::default()) {
        tracing::warn!(node = NODE_NAME, error = %e.message, "simulated node not created");
    }
}

impl Kubelet {
    /// Watches the pods collection and acts on every Pod it sees, re-subscribing (and so
    /// re-evaluating every Pod) whenever its stream is dropped.
    async fn run(self: Arc<Self>) {
        let key = self.rt.store_key();
        let shutdown = self.shutdown.clone();
        while !shutdown.is_cancelled() {
            let Ok(mut sub) = self.api.store.watch(&key, Start::Current { initial: true }) else {
                return;
            };
            for (_, bytes) in std::mem::take(&mut sub.initial) {
                self.observe(&crate::storage::parse(&bytes));
            }
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    ev = sub.rx.recv() => match ev {
                        Some(ev) if ev.ty != crate::storage::EventType::Deleted => {
                            self.observe(&crate::storage::parse(&ev.obj));
                        }
                        Some(_) => {}
                        None => break,
                    },
                }
            }
        }
    }

    /// Decides what Pod `pod` needs next: binding, a start, or a stop.
    fn observe(self: &Arc<Self>, pod: &Value) {
        let uid = meta::meta_str(pod, "uid").unwrap_or("").to_string();
        if meta::meta_str(pod, "deletionTimestamp").is_some() {
            if self.stopping.lock().insert(uid.clone()) {
                self.later(self.stop_after(pod), pod, uid, true);
            }
            return;
        }
        let waiting = phase(pod) != "Running" && !finished(pod);
        match node_name(pod) {
            "" => self.bind(pod),
            NODE_NAME if waiting && self.starting.lock().insert(uid.clone()) => {
                self.later(self.cfg.start_delay, pod, uid, false);
            }
            _ => {}
        }
    }

    /// min(grace, stop delay) for a Pod marked for deletion.
    fn stop_after(&self, pod: &Value) -> Duration {
        let grace = pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .max(0);
        self.cfg
            .stop_delay
            .min(Duration::from_secs(grace.unsigned_abs()))
    }

    /// After `delay`, stops (or runs) the Pod with `uid` as it is then, if it still exists,
    /// and forgets that this was pending.
    fn later(self: &Arc<Self>, delay: Duration, pod: &Value, uid: String, stop: bool) {
        let me = self.clone();
        let key =
            crate::registry::objects::okey(&self.rt, Some(meta::namespace(pod)), meta::name(pod));
        tokio::spawn(async move {
            tokio::select! {
                _ = me.shutdown.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            let pending = if stop { &me.stopping } else { &me.starting };
            if let Some(pod) = me.find(&key, &uid) {
                if stop {
                    me.stop(&pod);
                } else {
                    me.run_pod(&pod);
                }
            }
            pending.lock().remove(&uid);
        });
    }

    /// The stored Pod at `key`, if it is still the one with `uid`.
    fn find(&self, key: &crate::storage::ObjKey, uid: &str) -> Option<Value> {
        let pod = self.api.store.get_value(&self.rt.store_key(), key)?;
        (meta::meta_str(&pod, "uid") == Some(uid)).then_some(pod)
    }

    /// The scheduler's part: `spec.nodeName`, then phase `Pending` with `PodScheduled`.
    fn bind(&self, pod: &Value) {
        let bound = self.write(pod, None, |v| {
            v["spec"]["nodeName"] = json!(NODE_NAME);
        });
        if bound.is_err() {
            return;
        }
        let now = meta::now();
        let _ = self.write(pod, Some("status"), |v| {
            v["status"] =
                json!({"phase": "Pending", "conditions": [condition("PodScheduled", &now)]});
        });
        tracing::debug!(
            namespace = meta::namespace(pod),
            name = meta::name(pod),
            node = NODE_NAME,
            "pod bound"
        );
    }

    /// The kubelet's part: the Pod's containers are running and ready.
    fn run_pod(&self, pod: &Value) {
        if meta::meta_str(pod, "deletionTimestamp").is_some() || phase(pod) == "Running" {
            return;
        }
        let n = self.next_ip.fetch_add(1, Ordering::Relaxed);
        let ip = format!("10.244.{}.{}", (n >> 8) & 0xff, n & 0xff);
        let status = running_status(pod, &ip, &meta::now());
        let _ = self.write(pod, Some("status"), move |v| v["status"] = status);
        tracing::debug!(namespace = meta::namespace(pod), name = meta::name(pod), pod_ip = %ip, "pod running");
    }

    /// The containers have stopped: delete the Pod with grace 0 (it goes unless finalizers
    /// hold it).
    fn stop(&self, pod: &Value) {
        let opts = DeleteOpts {
            uid: meta::meta_str(pod, "uid").map(String::from),
            grace: Some(0),
            ..Default::default()
        };
        let ns = meta::namespace(pod);
        let _ = hooks::delete_object(&self.api, &self.rt, Some(ns), meta::name(pod), &opts);
        tracing::debug!(namespace = ns, name = meta::name(pod), "pod stopped");
    }

    /// Rewrites Pod `pod` (same uid) through the update path, main resource or `sub`.
    fn write(
        &self,
        pod: &Value,
        sub: Option<&str>,
        f: impl FnOnce(&mut Value),
    ) -> Result<(), ApiError> {
        let uid = meta::meta_str(pod, "uid").map(String::from);
        let ns = meta::namespace(pod);
        hooks::update_object(
            &self.api,
            &self.rt,
            Some(ns),
            meta::name(pod),
            sub,
            Default::default(),
            false,
            |cur| {
                if meta::meta_str(cur, "uid").map(String::from) != uid {
                    return Err(ApiError::conflict("", "pods", meta::name(cur)));
                }
                let mut v = cur.clone();
                meta::remove_meta(&mut v, "resourceVersion");
                f(&mut v);
                Ok(v)
            },
        )
        .map(|_| ())
    }
}

/// A `True` Pod condition that changed at `now`.
fn condition(type_: &str, now: &str) -> Value {
    json!({"type": type_, "status": "True", "lastTransitionTime": now})
}

/// The status of a running Pod: every container started and ready, init containers done.
fn running_status(pod: &Value, ip: &str, now: &str) -> Value {
    let uid = meta::meta_str(pod, "uid").unwrap_or("");
    let short = uid.get(..8).unwrap_or(uid);
    let container = |c: &Value, state: Value, ready: bool| {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        json!({"name": name, "image": image, "imageID": format!("envtest://{image}"),
            "containerID": format!("envtest://{short}-{name}"), "ready": ready, "started": ready,
            "restartCount": 0, "state": state})
    };
    let list = |path: &str| -> Vec<Value> {
        pod.pointer(path)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let running = json!({"running": {"startedAt": now}});
    let done = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}});
    let scheduled = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| condition("PodScheduled", now));
    let mut status = json!({
        "phase": "Running",
        "conditions": [condition("Initialized", now), condition("Ready", now),
            condition("ContainersReady", now), scheduled],
        "hostIP": NODE_IP, "hostIPs": [{"ip": NODE_IP}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": "BestEffort",
        "containerStatuses": list("/spec/containers").iter().map(|c| container(c, running.clone(), true)).collect::<Vec<_>>(),
    });
    let inits = list("/spec/initContainers");
    if !inits.is_empty() {
        status["initContainerStatuses"] = json!(
            inits
                .iter()
                .map(|c| container(c, done.clone(), false))
                .collect::<Vec<_>>()
        );
    }
    status
}
