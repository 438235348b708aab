//! The process-wide Prometheus registry every ctrl metric is registered in.
//!
//! Work-queue metrics (`crate::workqueue`), controller metrics (`crate::controller`),
//! the kube client's request metrics ([`client`]), process metrics ([`process`]), the tokio runtime's ([`runtime`]) and
//! user collectors all go here, so one scrape of the metrics server shows everything,
//! under controller-runtime's metric names. The server ([`server`]) serves plain
//! HTTP or, with `secure_serving`, HTTPS behind the authentication and authorization
//! filter of [`filters`].

pub mod client;
pub mod filters;
pub mod process;
pub mod runtime;
pub mod server;

use std::sync::OnceLock;

use prometheus::Registry;

/// The registry ctrl registers its metrics in; add your own collectors to it too.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}
