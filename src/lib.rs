//! ctrl: a Rust port of Go's controller-runtime.
//!
//! This facade re-exports the pieces operator authors use — every module of
//! `ctrl-runtime` under its own name (`ctrl::manager`, `ctrl::cache`, `ctrl::handler`,
//! ...) and `ctrl-builder` as [`builder`] — so an operator depends on `ctrl` alone; see
//! [`prelude`] for the names most need in one import.

/// Many clusters, one operator: the `multicluster` feature (off by default).
#[cfg(feature = "multicluster")]
pub use ctrl_runtime::multicluster;
/// OpenTelemetry traces: the `otel` feature (off by default).
#[cfg(feature = "otel")]
pub use ctrl_runtime::otel;
/// Object-level sharding: the `sharding` feature (off by default).
#[cfg(feature = "sharding")]
pub use ctrl_runtime::sharding;
pub use ctrl_runtime::workqueue;
pub use ctrl_runtime::{cache, client, conditions};
/// Webhooks and their certificates: the `webhook` feature (off by default).
#[cfg(feature = "webhook")]
pub use ctrl_runtime::{certrotator, webhook};
pub use ctrl_runtime::{certwatcher, leaderelection, metricsserver, recorder};
pub use ctrl_runtime::{clock, healthz, log, manager};
pub use ctrl_runtime::{config, pprof};
pub use ctrl_runtime::{controller, controllerutil, event, handler, predicate, reconcile, source};
pub use ctrl_runtime::{http, rbac, tls};

pub mod cli;
pub mod manifests;

/// ctrl-envtest, the in-process API server (Go's `pkg/envtest`), with the feature
/// `envtest`: what an operator's tests start.
#[cfg(feature = "envtest")]
pub use ctrl_envtest as envtest;

/// The cancellation token every `reconcile` receives and `Manager::start` stops on
/// (tokio-util's), so that an operator needs no dependency of its own for it.
pub use tokio_util::sync::CancellationToken;

/// The attribute for implementing ctrl's async traits (`Reconciler`, `Runnable`,
/// `Source`, ...) by hand: `#[ctrl::async_trait]`.
pub use async_trait::async_trait;

/// The manager and its options (Go's `ctrl.Manager`, `ctrl.Options`,
/// `ctrl.SetupSignalHandler`).
pub use ctrl_runtime::manager::{Manager, Options, Runnable, RunnableFunc, shutdown_signal};

/// The client's traits, to call their verbs on any client, cache or reader (Go's
/// `client.Reader` and `client.Writer`).
pub use ctrl_runtime::{cache::Reader, client::ObjectWriter};

/// `#[derive(ApplyConfiguration)]`: the typed server-side apply form of a type (and, next to
/// kube's `CustomResource`, of the whole object): see [`client::apply`].
pub use ctrl_derive::ApplyConfiguration;

/// The multi-cluster builder (feature `multicluster`).
#[cfg(feature = "multicluster")]
pub use ctrl_builder::MultiClusterBuilder;
/// The webhook builder (Go's `ctrl.NewWebhookManagedBy(mgr)`; feature `webhook`).
#[cfg(feature = "webhook")]
pub use ctrl_builder::webhook::WebhookBuilder;
/// The controller builder (Go's `ctrl.NewControllerManagedBy(mgr)`), and the builder
/// crate itself as `ctrl::builder`.
pub use ctrl_builder::{self as builder, ControllerBuilder};

/// The names most operators need, in one import: `use ctrl::prelude::*;` — the
/// manager, the builder, reconcilers (of requests, typed requests or objects:
/// `Reconciler<Request>`, `Reconciler<MyRequest>`, `Reconciler<Arc<K>>`), the client, cache and
/// recorder, handlers, predicates, sources, controller utilities, and the
/// `CancellationToken` and `#[async_trait]` every reconciler signature uses.
pub mod prelude {
    pub use async_trait::async_trait;
    pub use tokio_util::sync::CancellationToken;

    pub use ctrl_runtime::workqueue;

    pub use ctrl_builder::ControllerBuilder;
    pub use ctrl_builder::reconciler::object_func;
    #[cfg(feature = "webhook")]
    pub use ctrl_builder::webhook::WebhookBuilder;

    pub use ctrl_runtime::controller::Controller;
    pub use ctrl_runtime::reconcile::{self, Action, Reconciler, Request, TypedRequest};
    pub use ctrl_runtime::{controllerutil, event, handler, predicate, source};

    pub use crate::metrics;
    pub use ctrl_derive::ApplyConfiguration;
    pub use ctrl_runtime::cache::{Cache, ListOptions, Reader};
    pub use ctrl_runtime::client::{Client, ObjectWriter, ignore_already_exists, ignore_not_found};
    pub use ctrl_runtime::healthz;
    pub use ctrl_runtime::log;
    pub use ctrl_runtime::manager::{
        self, BoxError, Manager, Runnable, RunnableFunc, shutdown_signal,
    };
    pub use ctrl_runtime::recorder::{self, EventType, Recorder};
}

/// Metrics (Go's `pkg/metrics`): the process-wide registry and its collectors, and, under
/// Go's names, the metrics server (`metrics::server`, Go's `pkg/metrics/server`) and its
/// authentication filters (`metrics::filters`, Go's `pkg/metrics/filters`), which live in
/// [`ctrl_runtime::metricsserver`] (above the HTTP layers the registry knows nothing of).
pub mod metrics {
    pub use ctrl_runtime::metrics::*;
    pub use ctrl_runtime::metricsserver as server;
    pub use ctrl_runtime::metricsserver::filters;
}

/// The quickstart's code blocks (`docs/quickstart.md`), compiled and run as doc
/// tests (`cargo test --doc`): the reconciler runs on ctrl-envtest.
#[cfg(doctest)]
#[doc = include_str!("../docs/quickstart.md")]
pub struct Quickstart;

/// The README's code blocks (its tour of the API), compiled and run as doc tests
/// (`cargo test --doc`), so that the README cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;
