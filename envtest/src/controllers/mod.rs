//! Layer 6, the in-process controller-manager: controllers that are clients of the registry
//! ([`registry::rest`](crate::registry::rest), [`registry::hooks`](crate::registry::hooks)), never
//! of the HTTP side. [`gc`] (the garbage collector), [`namespaces`] (namespace lifecycle),
//! [`clusterrole_aggregation`] (the rules of aggregated ClusterRoles), [`crd_cleanup`] (deleting
//! a CRD's objects) and [`namespace_defaults`] (each namespace's `default` ServiceAccount and
//! `kube-root-ca.crt`) are write observers: the registry hands them every committed write and
//! queues the writes they make in turn ([`registry::hooks::settle`](crate::registry::hooks::settle)).
//! [`kubelet`] (the simulated kubelet, opt-in) watches the pods collection in its own task. The
//! workload controllers — [`deployment`], [`replicaset`], [`statefulset`], [`daemonset`], [`job`],
//! [`cronjob`] (with the `cronjob` feature), [`endpointslice`] — run as kube-controller-manager's do, each a watch-driven loop
//! ([`runner`]) reading and writing through [`client`]. `env` registers and starts them.

pub(crate) mod client;
pub(crate) mod clusterrole_aggregation;
pub(crate) mod crd_cleanup;
#[cfg(feature = "cronjob")]
pub(crate) mod cronjob;
pub(crate) mod daemonset;
pub(crate) mod deployment;
pub(crate) mod endpointslice;
pub(crate) mod gc;
pub(crate) mod job;
pub(crate) mod kubelet;
pub(crate) mod namespace_defaults;
pub(crate) mod namespaces;
pub(crate) mod replicaset;
pub(crate) mod runner;
pub(crate) mod statefulset;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::registry::context::Apiserver;
use crate::registry::hooks::Observer;

/// The write observers of a server, in the order they see each write: the CRD cleanup always
/// (the API server does it itself), the garbage collector and namespace lifecycle when
/// `controllers` is on (`EnvironmentBuilder::controllers`), and with the workload controllers
/// (`workloads`: the server's CA certificate) each namespace's defaults.
pub(crate) fn observers(controllers: bool, workloads: Option<&str>) -> Vec<Arc<dyn Observer>> {
    let mut out: Vec<Arc<dyn Observer>> = vec![Arc::new(crd_cleanup::CrdCleanup)];
    if controllers {
        out.push(Arc::new(gc::Gc));
        out.push(Arc::new(namespaces::Namespaces));
        out.push(Arc::new(clusterrole_aggregation::ClusterRoleAggregation));
    }
    if let Some(ca) = workloads.filter(|_| controllers) {
        out.push(Arc::new(namespace_defaults::NamespaceDefaults {
            ca: ca.to_string(),
        }));
    }
    out
}

/// Starts the workload controllers (until `shutdown`).
pub(crate) fn start_workloads(api: &Arc<Apiserver>, shutdown: &CancellationToken) {
    let all: Vec<Arc<dyn runner::Reconciler>> = vec![
        Arc::new(deployment::Deployments),
        Arc::new(replicaset::ReplicaSets),
        Arc::new(statefulset::StatefulSets),
        Arc::new(job::Jobs),
        #[cfg(feature = "cronjob")]
        Arc::new(cronjob::CronJobs),
        Arc::new(daemonset::DaemonSets),
        Arc::new(endpointslice::EndpointSlices),
    ];
    for r in all {
        runner::start(api, shutdown, r);
    }
}
