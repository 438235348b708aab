//! ctrl-runtime: everything below the builder.
//!
//! A Rust port of Go's controller-runtime. The data flow is: watch stream (kube's
//! watcher) -> informer [`cache`] -> [`predicate`]s -> [`handler`]s -> [`workqueue`] ->
//! [`controller`] workers -> [`Reconciler`](reconcile::Reconciler). Each module is one
//! concept, as controller-runtime has one package per concept; module docs say how each
//! relates to its neighbours.
//!
//! # The layers
//!
//! A module may import only the modules below it (checked by `tests/integration/layers.rs`, with no
//! file-level import circle inside a module and no function over 80 lines). Top first:
//!
//! ```text
//! multicluster/   clusters, providers, cluster-aware requests and sources (feature `multicluster`)
//! sharding/       shard leases, the hash ring, the sharder (runnables and webhooks; feature `sharding`)
//! certrotator/    webhook certificates without cert-manager: a CA in a Secret, caBundle injection (feature `webhook`)
//! manager/        Manager, Runnable, the runnable groups and their order, flags, signals
//! rbac/           the RBAC rules the parts below need, and their manifest
//! metricsserver/  the metrics HTTP(S) server and its authn/authz filters
//! webhook/        admission and conversion webhooks, their TLS server (feature `webhook`)
//! leaderelection/ the Lease lock and the elector
//! recorder/       the Events recorder
//! conditions/     metav1 Condition helpers
//! controllerutil/ owner references, finalizers, create_or_update / create_or_patch
//! controller/     Controller: workers, the reconcile handler, options, metrics
//! config          manager-wide controller defaults
//! source/         Source: Kind (cache-backed), Channel, Func, Informer
//! client/         the cached-read / direct-write client, subresources, the API reader
//! cache/          informers on kube's watcher, the store and its indexes, readers
//! handler/        EventHandler: an event to reconcile requests in the queue
//! predicate/      Predicate: which events reach a handler
//! event/          Create / Update / Delete / Generic events over Arc<K>
//! reconcile/      Reconciler, Request, Action, Error, the triggers a reconcile reads
//! workqueue/      the queues, rate limiters and queue metrics, the trigger sets of queued keys
//! log/            logging setup with controller-runtime's zap flags
//! otel/           OpenTelemetry export, trace contexts on objects, reconcile links (feature `otel`)
//! pprof           the profiling server's routes
//! healthz/        liveness and readiness checks and their handler
//! http/           the small HTTP server the manager's endpoints run on
//! tls/            TLS hardening options, rustls server config, self-signed certificates
//! certwatcher/    a certificate pair on disk, re-read when it changes
//! metrics/        the process-wide Prometheus registry and its collectors
//! task            spawn: ctrl-net's tokio::spawn of a boxed future, re-exported
//! error           BoxError and panic_message, shared by every layer
//! ```
//!
//! Where Go's packages import each other through interfaces, the lower module here
//! owns the type and the upper one adapts it: a cache, a controller and the servers do
//! not know the manager, and `manager::adapters` makes each a `Runnable`.
//!
//! [`clock`] is the `ctrl-clock` crate, below every layer (ctrl-envtest reads it too): every
//! wall-clock read of the runtime (Lease times, Condition times, log timestamps) goes through it.

/// The wall clock reconcilers and the runtime read: real in production, fake in tests
/// (`ctrl-clock`).
pub use ctrl_clock as clock;

pub mod cache;
#[cfg(feature = "webhook")]
pub mod certrotator;
pub mod certwatcher;
pub mod client;
pub mod conditions;
pub mod config;
pub mod controller;
pub mod controllerutil;
pub mod error;
pub mod event;
pub mod handler;
pub mod healthz;
pub mod http;
pub mod leaderelection;
pub mod log;
pub mod manager;
pub mod metrics;
pub mod metricsserver;
#[cfg(feature = "multicluster")]
pub mod multicluster;
#[cfg(feature = "otel")]
pub mod otel;
pub mod pprof;
pub mod predicate;
pub mod rbac;
pub mod reconcile;
pub mod recorder;
#[cfg(feature = "sharding")]
pub mod sharding;
pub mod source;
pub mod task;
pub mod tls;
#[cfg(feature = "webhook")]
pub mod webhook;
pub mod workqueue;
