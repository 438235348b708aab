//! The simulated kubelet (opt-in: `EnvironmentBuilder::simulate_pods`), a scheduler and a
//! kubelet in miniature, as kwok gives a real cluster: the Nodes ([`NODE_NAME`], then
//! `envtest-node-2`...) are created at start with a kubelet's conditions, capacity, addresses
//! and node info; a Pod that is created is bound to one in one write, as the `pods/binding`
//! subresource does (`spec.nodeName`, `PodScheduled`, phase `Pending`), and after the start
//! delay reported running (`status::running`). Pods whose `restartPolicy` is not `Always`
//! exit after their run time (`status::finished`); the faults a test asks for
//! (`Faults::pod_fault`) are played by `unhealthy`.//!
//! Deletion follows upstream's pod strategy: a DELETE of a Pod that is bound and not finished
//! marks it (`deletionTimestamp` = now + grace, `deletionGracePeriodSeconds`) instead of
//! removing it, the grace coming from the DeleteOptions, else
//! `spec.terminationGracePeriodSeconds`, else 30 s (negative means 1; grace 0, an unbound or a
//! finished Pod go at once) — the pods strategy of the registry's delete
//! (`registry::strategy::pod_graceful_delete`) does that when the kubelet is on. The
//! kubelet treats containers as stopping quickly: it deletes a marked Pod with grace 0 after
//! min(grace, stop delay), which removes it (or, with finalizers, leaves it to them).
//!
//! Like `gc` and `namespaces` it is a client of the registry, not of HTTP: it watches the
//! pods collection through `Store::watch` (re-subscribing with a full re-evaluation if its
//! stream is dropped) and writes through `registry::rest`, so every step is an ordinary write
//! with a resourceVersion and a watch event. It stops with the server.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::api::meta;
use crate::api::status::ApiError;
use crate::faults::{Faults, PodFault};
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks;
use crate::registry::rest::DeleteOpts;
use crate::registry::strategy::{finished, node_name, phase};
use crate::storage::Start;

mod status;
mod unhealthy;

/// The simulated Node every Pod is bound to.
pub const NODE_NAME: &str = "envtest-node";

pub(crate) use crate::registry::context::KubeletConfig as Config;

fn pod_type(api: &Apiserver) -> Option<Arc<ResourceType>> {
    api.registry.snapshot().get("", "v1", "pods").cloned()
}

/// What the kubelet does to a Pod after a delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    /// Bound: its containers start (`Running`, `Ready`).
    Run,
    /// Running to completion: its containers exit.
    Finish,
    /// Marked for deletion: its containers stop and it goes.
    Stop,
    /// Running with a fault (`Faults::pod_fault`): the next crash or readiness flip.
    Fault,
}

/// The running kubelet's bookkeeping: Pods (by uid) with a start or stop already pending,
/// and the next Pod IP.
struct Kubelet {
    api: Arc<Apiserver>,
    shutdown: CancellationToken,
    cfg: Config,
    rt: Arc<ResourceType>,
    /// Steps already scheduled, by Pod uid.
    pending: Mutex<HashSet<(String, Step)>>,
    next_ip: AtomicU32,
    /// The simulated Nodes, and the next one to schedule on (round robin).
    nodes: Vec<String>,
    next_node: AtomicU32,
    /// The Pod faults a test asked for (`Faults::pod_fault`).
    faults: Faults,
}

/// Creates the simulated Nodes and starts the kubelet task (until the server shuts down).
pub(crate) fn start(
    api: &Arc<Apiserver>,
    shutdown: CancellationToken,
    cfg: Config,
    faults: Faults,
) {
    let nodes: Vec<String> = (0..cfg.nodes.max(1)).map(node_name_of).collect();
    for (i, n) in nodes.iter().enumerate() {
        create_node(api, n, i);
    }
    let Some(rt) = pod_type(api) else {
        return;
    };
    let kubelet = Arc::new(Kubelet {
        api: api.clone(),
        shutdown,
        cfg,
        rt,
        nodes,
        pending: Mutex::new(HashSet::new()),
        next_ip: AtomicU32::new(2),
        next_node: AtomicU32::new(0),
        faults,
    });
    crate::task::spawn(kubelet.run());
}

/// The name of simulated Node `i`: [`NODE_NAME`], then `envtest-node-2`, `envtest-node-3`...
pub(crate) fn node_name_of(i: usize) -> String {
    if i == 0 {
        NODE_NAME.to_string()
    } else {
        format!("{NODE_NAME}-{}", i + 1)
    }
}

/// The `InternalIP` of simulated Node `i`.
fn node_ip(i: usize) -> String {
    format!("10.0.0.{}", 10 + i % 240)
}

/// The Node object as a kubelet registers it: labels, the `Ready`, `MemoryPressure`,
/// `DiskPressure` and `PIDPressure` conditions, addresses, capacity, allocatable, node info.
fn create_node(api: &Arc<Apiserver>, name: &str, i: usize) {
    let Some(rt) = api.registry.snapshot().get("", "v1", "nodes").cloned() else {
        return;
    };
    let now = meta::now();
    let cond = |t: &str, s: &str, reason: &str, msg: &str| {
        json!({"type": t, "status": s, "reason": reason, "message": msg,
            "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let resources = json!({"cpu": "32", "memory": "256Gi", "pods": "110",
        "ephemeral-storage": "100Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0"});
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux", "type": "envtest"}},
        "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")]},
        "status": {
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")],
            "addresses": [{"type": "InternalIP", "address": node_ip(i)}, {"type": "Hostname", "address": name}],
            "capacity": resources, "allocatable": resources,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": "", "containerRuntimeVersion": "envtest://simulated",
                "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "v1.33.0-envtest",
                "machineID": "", "operatingSystem": "linux", "osImage": "ctrl-envtest simulated node",
                "systemUUID": ""}
        }
    });
    if let Err(e) = hooks::create_object(api, &rt, None, node, Default::default()) {
        tracing::warn!(node = name, error = %e.message, "simulated node not created");
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

    /// Decides what Pod `pod` needs next: binding, a start, an end, or a stop.
    fn observe(self: &Arc<Self>, pod: &Value) {
        let uid = meta::meta_str(pod, "uid").unwrap_or("").to_string();
        if meta::meta_str(pod, "deletionTimestamp").is_some() {
            self.later(Step::Stop, self.stop_after(pod), pod, uid);
            return;
        }
        let node = node_name(pod);
        if node.is_empty() {
            self.bind(pod);
        } else if !self.nodes.iter().any(|n| n == node) || finished(pod) {
        } else if phase(pod) != "Running" {
            self.later(Step::Run, self.cfg.start_delay, pod, uid);
        } else if let Some(f) = self.fault_of(pod).filter(|f| !self.fault_ends_pod(*f, pod)) {
            let every = match f {
                PodFault::FlappingReadiness { period } => period,
                _ => self.cfg.start_delay.max(Duration::from_millis(100)),
            };
            self.later(Step::Fault, every, pod, uid);
        } else if status::runs_to_completion(pod) {
            self.later(
                Step::Finish,
                status::run_time(pod, self.cfg.run_time),
                pod,
                uid,
            );
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

    /// After `delay`, takes `step` on the Pod with `uid` as it is then, if it still exists,
    /// and forgets that this was pending; nothing if that step is already pending.
    fn later(self: &Arc<Self>, step: Step, delay: Duration, pod: &Value, uid: String) {
        if !self.pending.lock().insert((uid.clone(), step)) {
            return;
        }
        let me = self.clone();
        let key =
            crate::registry::objects::okey(&self.rt, Some(meta::namespace(pod)), meta::name(pod));
        crate::task::spawn(async move {
            tokio::select! {
                _ = me.shutdown.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            // Forgotten first: the write below is observed (and may ask for the next step).
            me.pending.lock().remove(&(uid.clone(), step));
            if let Some(pod) = me.find(&key, &uid) {
                match step {
                    Step::Stop => me.stop(&pod),
                    Step::Run => me.run_pod(&pod),
                    Step::Finish => me.finish(&pod),
                    Step::Fault => me.fault(&pod),
                }
            }
        });
    }

    /// The stored Pod at `key`, if it is still the one with `uid`.
    fn find(&self, key: &crate::storage::ObjKey, uid: &str) -> Option<Value> {
        let pod = self.api.store.get_value(&self.rt.store_key(), key)?;
        (meta::meta_str(&pod, "uid") == Some(uid)).then_some(pod)
    }

    /// The scheduler's part, as the `pods/binding` subresource writes it: `spec.nodeName`
    /// and the `PodScheduled` condition in one write. The Node is the one the Pod's required
    /// node affinity (`matchFields` on `metadata.name`, as DaemonSets set it) or
    /// `kubernetes.io/hostname` node selector names, else the next in turn.
    fn bind(&self, pod: &Value) {
        let node = status::wanted_node(pod, &self.nodes).unwrap_or_else(|| {
            let n = self.next_node.fetch_add(1, Ordering::Relaxed) as usize;
            self.nodes[n % self.nodes.len()].clone()
        });
        let now = meta::now();
        let bound = self.write(pod, Some("binding"), |v| {
            v["spec"]["nodeName"] = json!(node);
            status::set_condition(v, status::condition("PodScheduled", &now));
            if v.pointer("/status/phase").is_none() {
                v["status"]["phase"] = json!("Pending");
            }
        });
        if bound.is_ok() {
            tracing::debug!(namespace = meta::namespace(pod), name = meta::name(pod), node = %node, "pod bound");
        }
    }

    /// The kubelet's part: the Pod's containers are running and ready.
    fn run_pod(&self, pod: &Value) {
        if meta::meta_str(pod, "deletionTimestamp").is_some() || phase(pod) == "Running" {
            return;
        }
        let node = self
            .nodes
            .iter()
            .position(|n| n == node_name(pod))
            .unwrap_or(0);
        let n = self.next_ip.fetch_add(1, Ordering::Relaxed);
        let ip = format!("10.244.{node}.{}", 2 + n % 250);
        let now = meta::now();
        let mut status = status::running(pod, &ip, &node_ip(node), &now);
        // A crash-looping Pod's containers die as they start: it is never ready.
        let crash = match self.fault_of(pod) {
            Some(PodFault::CrashLoop) => Some((1, "Error")),
            Some(PodFault::OomKilled) if !status::runs_to_completion(pod) => {
                Some((137, "OOMKilled"))
            }
            _ => None,
        };
        if let Some((code, reason)) = crash {
            let mut started = pod.clone();
            started["status"] = status;
            status = unhealthy::crashed(&started, code, reason, &now);
        }
        let _ = self.write(pod, Some("status"), move |v| v["status"] = status);
        tracing::debug!(namespace = meta::namespace(pod), name = meta::name(pod), pod_ip = %ip, "pod running");
    }

    /// A Pod that runs to completion (`restartPolicy` `Never` or `OnFailure`) after its run
    /// time: its containers exit with the Pod's exit code (`status::EXIT_CODE`), the phase is
    /// `Succeeded` or `Failed`.
    fn finish(&self, pod: &Value) {
        if meta::meta_str(pod, "deletionTimestamp").is_some() || phase(pod) != "Running" {
            return;
        }
        let oom = self.fault_of(pod) == Some(PodFault::OomKilled);
        let code = if oom { 137 } else { status::exit_code(pod) };
        let on_failure = pod.pointer("/spec/restartPolicy") == Some(&json!("OnFailure"));
        if code != 0 && on_failure {
            // `OnFailure`: the container is restarted in place (and runs again).
            let reason = if oom { "OOMKilled" } else { "Error" };
            let status = unhealthy::crashed(pod, code, reason, &meta::now());
            let _ = self.write(pod, Some("status"), move |v| v["status"] = status);
            return;
        }
        let mut status = status::finished(pod, code, &meta::now());
        if oom {
            for c in status["containerStatuses"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                c["state"]["terminated"]["reason"] = json!("OOMKilled");
            }
        }
        let _ = self.write(pod, Some("status"), move |v| v["status"] = status);
        tracing::debug!(
            namespace = meta::namespace(pod),
            name = meta::name(pod),
            exit_code = code,
            "pod finished"
        );
    }

    /// The fault a test asked for on `pod`, if any.
    fn fault_of(&self, pod: &Value) -> Option<PodFault> {
        self.faults
            .pod_fault_of(meta::namespace(pod), meta::name(pod))
    }

    /// An OOM kill ends a Pod that runs to completion (through `finish`).
    fn fault_ends_pod(&self, f: PodFault, pod: &Value) -> bool {
        f == PodFault::OomKilled && status::runs_to_completion(pod)
    }

    /// The next step of a faulty running Pod: a crash (`CrashLoop`, `OomKilled`) or a
    /// readiness flip.
    fn fault(&self, pod: &Value) {
        if meta::meta_str(pod, "deletionTimestamp").is_some() || phase(pod) != "Running" {
            return;
        }
        let now = meta::now();
        let status = match self.fault_of(pod) {
            Some(PodFault::CrashLoop) => unhealthy::crashed(pod, 1, "Error", &now),
            Some(PodFault::OomKilled) => unhealthy::crashed(pod, 137, "OOMKilled", &now),
            Some(PodFault::FlappingReadiness { .. }) => unhealthy::flapped(pod, &now),
            _ => return,
        };
        let _ = self.write(pod, Some("status"), move |v| v["status"] = status);
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
