//! The process-wide Prometheus registry every ctrl metric is registered in
//! (controller-runtime's `pkg/metrics`).
//!
//! A leaf: the work queue's, the controllers', the webhooks' and the leader elector's
//! metrics are registered here by those modules, next to the kube client's request
//! metrics ([`client`]), process metrics ([`process`]), the tokio runtime's
//! ([`runtime`]) and user collectors, so one scrape shows everything under
//! controller-runtime's metric names. Serving them is the metrics server's job
//! (`metricsserver`, Go's `pkg/metrics/server`), which sits above the HTTP and TLS
//! layers this module knows nothing of.

pub mod client;
pub mod process;
pub mod runtime;

use std::sync::OnceLock;

use prometheus::Registry;

/// The registry ctrl registers its metrics in; add your own collectors to it too.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}
