//! What the registry works on for one API server ([`Apiserver`]): the table of served types,
//! the store, the per-kind options fixed at start and the write observers (the controllers,
//! [`super::hooks`]). Built once by `env`; the registry's functions, admission and the
//! controllers take it by reference, and the HTTP side holds it inside its own state
//! (`endpoints::State`), which adds what only HTTP needs.

use std::sync::Arc;
use std::time::Duration;

use super::Registry;
use super::hooks::Observer;
use crate::storage::Store;

/// The registry layer of one API server.
pub(crate) struct Apiserver {
    /// The served resource types.
    pub registry: Registry,
    /// Where objects are kept.
    pub store: Arc<Store>,
    /// Pods are scheduled, run and stopped by the simulated kubelet (`controllers::kubelet`);
    /// the pods strategy then deletes them gracefully.
    pub kubelet: Option<KubeletConfig>,
    /// Run after every committed write, in order (`super::hooks::settle`).
    pub observers: Vec<Arc<dyn Observer>>,
    /// Held by the writes that allocate Service cluster IPs and node ports
    /// (`super::defaults::Allocation`).
    pub allocations: parking_lot::Mutex<()>,
}

/// How the simulated kubelet paces a Pod's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KubeletConfig {
    /// From binding to `Running`.
    pub start_delay: Duration,
    /// The longest a deleted Pod's containers take to stop (the grace period is the other bound).
    pub stop_delay: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            start_delay: Duration::from_millis(500),
            stop_delay: Duration::from_secs(1),
        }
    }
}
