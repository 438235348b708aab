//! What every layer above storage shares for one API server ([`State`]): the registry of
//! served types, the store, fault injection, the settings fixed at start, the write observers
//! (the controllers, [`super::hooks`]) and the shutdown token. Built once by `env`; the server,
//! the handlers and the controllers take it by `Arc`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Registry;
use super::hooks::Observer;
use crate::faults::Faults;
use crate::storage::Store;

/// Server settings fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub token: Option<String>,
    pub bookmark_interval: Duration,
    pub max_watch: Duration,
    /// How long a connection may take to send a request head, or sit idle between requests.
    pub header_read_timeout: Duration,
    /// Pods are scheduled, run and stopped by the simulated kubelet (`controllers::kubelet`).
    pub kubelet: Option<KubeletConfig>,
}

/// Everything a request handler can reach.
pub(crate) struct State {
    pub registry: Registry,
    pub store: Arc<Store>,
    pub faults: Faults,
    pub settings: Settings,
    /// Run after every committed write, in order (`super::hooks::settle`).
    pub observers: Vec<Arc<dyn Observer>>,
    pub shutdown: CancellationToken,
    pub addr: std::net::SocketAddr,
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
