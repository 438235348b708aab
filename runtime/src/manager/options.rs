//! [`Options`]: how a manager is built, with controller-runtime's defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cache;
use crate::client;
use crate::config;
use crate::http::ServerOptions;
use crate::leaderelection::{
    self, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
};
use crate::metricsserver::{self as metrics_server, DEFAULT_BIND_ADDRESS};
#[cfg(feature = "webhook")]
use crate::webhook;

/// controller-runtime's default graceful shutdown period.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the readiness handler is mounted by default.
pub const DEFAULT_READINESS_ENDPOINT: &str = "/readyz";

/// Where the liveness handler is mounted by default.
pub const DEFAULT_LIVENESS_ENDPOINT: &str = "/healthz";

/// The name of the readiness check the manager adds for its cache's sync.
pub const CACHE_SYNC_CHECK: &str = "cache-sync";

/// How a manager runs (controller-runtime's `manager.Options`).
///
/// Build with struct update syntax:
/// `Options { health_probe_bind_address: ":8081".into(), ..Default::default() }`.
#[derive(Clone, Debug)]
pub struct Options {
    /// The cache's options (namespaces, selectors, transforms, sync period).
    pub cache: cache::Options,
    /// The options of the manager's client (Go's `Options.Client`): e.g.
    /// `client.cache.read_your_writes_consistency_enabled` makes its cached reads see its
    /// own writes.
    pub client: client::Options,
    /// Where `/metrics` is served: `host:port`, `:port` (all interfaces), port 0 for
    /// any free port; `"0"` disables the metrics server. Empty means the default,
    /// `":8080"`.
    pub metrics_bind_address: String,
    /// How the metrics server serves (Go's `Options.Metrics`): plain HTTP by default;
    /// `secure_serving` for HTTPS, `filter_provider` for authentication and
    /// authorization, `tls` for hardening. See [`crate::metricsserver::Options`].
    pub metrics: metrics_server::Options,
    /// Where `/healthz` and `/readyz` are served; empty or `"0"` (the default)
    /// disables the health probe server.
    pub health_probe_bind_address: String,
    /// Where the profiling endpoints (`/debug/pprof/`, see [`crate::pprof`]) are
    /// served (Go's `PprofBindAddress`, the `--pprof-bind-address` flag); empty or
    /// `"0"` (the default) disables them.
    pub pprof_bind_address: String,
    /// The readiness endpoint; default `/readyz`.
    pub readiness_endpoint_name: String,
    /// The liveness endpoint; default `/healthz`.
    pub liveness_endpoint_name: String,
    /// Limits and timeouts of the metrics and probe servers (Go's `httpserver.New`).
    pub server: ServerOptions,
    /// How long stopping waits for runnables to return, in stop order, before
    /// `start` aborts those still running (drops their futures: a controller's
    /// reconciles in flight end at their current `.await`) and returns an error naming
    /// them. Default 30 s;
    /// [`Duration::ZERO`] does not wait (and reports nothing); [`Duration::MAX`]
    /// waits forever.
    pub graceful_shutdown_timeout: Duration,
    /// Whether to elect a leader before starting leader-election runnables (the
    /// `--leader-elect` flag); default off. See [`crate::leaderelection`].
    pub leader_election: bool,
    /// The name of the Lease used for leader election; required when
    /// `leader_election` is on.
    pub leader_election_id: String,
    /// The namespace of that Lease; `None` reads the pod's namespace from the
    /// service account's namespace file, and fails outside a cluster (set it there).
    pub leader_election_namespace: Option<String>,
    /// Labels put on the Lease.
    pub leader_election_labels: BTreeMap<String, String>,
    /// Whether the leader clears the Lease's holder when the manager stops
    /// gracefully, so a standby takes over at once instead of after the lease
    /// duration. Only safe if nothing the leader guards outlives `start`. Default false.
    pub leader_election_release_on_cancel: bool,
    /// The lock to elect on instead of the Lease `leader_election_id` (Go's
    /// `LeaderElectionResourceLockInterface`): a [`leaderelection::Lock`] of your
    /// own, wrapped in a [`leaderelection::ResourceLock`]. Its identity is the
    /// manager's; `leader_election_id`, `_namespace`, `_labels` and
    /// `leader_election_config` are then not used. Default none.
    pub leader_election_resource_lock: Option<leaderelection::ResourceLock>,
    /// The client configuration for the Lease (Go's `LeaderElectionConfig`), when it
    /// must live elsewhere or be reached with other credentials than the rest of the
    /// manager; `None` uses the manager's client.
    pub leader_election_config: Option<kube::Config>,
    /// How long standbys wait after the last observed renewal before taking over.
    /// Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader retries renewing before it gives up. Default 10 s.
    pub renew_deadline: Duration,
    /// How long leader election waits between attempts. Default 2 s.
    pub retry_period: Duration,
    /// The webhook server the manager runs (Go's `Options.WebhookServer`); `None`
    /// makes one with default `webhook::Options` (port 9443, cert dir
    /// `<tmp>/k8s-webhook-server/serving-certs`). See
    /// [`Manager::webhook_server`](super::Manager::webhook_server). Feature `webhook`.
    #[cfg(feature = "webhook")]
    pub webhook_server: Option<webhook::Server>,
    /// Defaults for every controller built against this manager (Go's
    /// `Options.Controller`): a controller's own options win, then these, then
    /// controller-runtime's defaults. See [`config::Controller`].
    pub controller: config::Controller,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            cache: cache::Options::default(),
            client: client::Options::default(),
            metrics_bind_address: DEFAULT_BIND_ADDRESS.to_string(),
            metrics: metrics_server::Options::default(),
            health_probe_bind_address: String::new(),
            pprof_bind_address: String::new(),
            readiness_endpoint_name: DEFAULT_READINESS_ENDPOINT.to_string(),
            liveness_endpoint_name: DEFAULT_LIVENESS_ENDPOINT.to_string(),
            server: ServerOptions::default(),
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            leader_election: false,
            leader_election_id: String::new(),
            leader_election_namespace: None,
            leader_election_labels: BTreeMap::new(),
            leader_election_release_on_cancel: false,
            leader_election_resource_lock: None,
            leader_election_config: None,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            #[cfg(feature = "webhook")]
            webhook_server: None,
            controller: config::Controller::default(),
        }
    }
}

impl Options {
    /// The metrics address to bind, or `None` when disabled.
    pub(super) fn metrics_addr(&self) -> Option<&str> {
        match self.metrics_bind_address.as_str() {
            "0" => None,
            "" => Some(DEFAULT_BIND_ADDRESS),
            a => Some(a),
        }
    }

    /// The pprof address to bind, or `None` when disabled.
    pub(super) fn pprof_addr(&self) -> Option<&str> {
        match self.pprof_bind_address.as_str() {
            "" | "0" => None,
            a => Some(a),
        }
    }

    /// The probe address to bind, or `None` when disabled.
    pub(super) fn probe_addr(&self) -> Option<&str> {
        match self.health_probe_bind_address.as_str() {
            "" | "0" => None,
            a => Some(a),
        }
    }
}
