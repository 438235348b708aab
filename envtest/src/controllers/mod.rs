//! Layer 6, the in-process controller-manager: controllers that are clients of the registry
//! ([`registry::rest`](crate::registry::rest), [`registry::hooks`](crate::registry::hooks)), never
//! of the HTTP side. [`gc`] (the garbage collector), [`namespaces`] (namespace lifecycle),
//! [`clusterrole_aggregation`] (the rules of aggregated ClusterRoles) and [`crd_cleanup`] (deleting
//! a CRD's objects) are write observers: the registry hands them every committed write and queues
//! the writes they make in turn ([`registry::hooks::settle`](crate::registry::hooks::settle)).
//! [`kubelet`] (the simulated kubelet, opt-in) watches the pods collection in its own task. `env`
//! registers and starts them.

pub(crate) mod clusterrole_aggregation;
pub(crate) mod crd_cleanup;
pub(crate) mod gc;
pub(crate) mod kubelet;
pub(crate) mod namespaces;

use std::sync::Arc;

use crate::registry::hooks::Observer;

/// The write observers of a server, in the order they see each write: the CRD cleanup always
/// (the API server does it itself), the garbage collector and namespace lifecycle when
/// `controllers` is on (`EnvironmentBuilder::controllers`).
pub(crate) fn observers(controllers: bool) -> Vec<Arc<dyn Observer>> {
    let mut out: Vec<Arc<dyn Observer>> = vec![Arc::new(crd_cleanup::CrdCleanup)];
    if controllers {
        out.push(Arc::new(gc::Gc));
        out.push(Arc::new(namespaces::Namespaces));
        out.push(Arc::new(clusterrole_aggregation::ClusterRoleAggregation));
    }
    out
}
