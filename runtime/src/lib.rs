//! ctrl-runtime: everything below the builder.
//!
//! A Rust port of Go's controller-runtime. The data flow is: watch stream (kube's
//! watcher) -> informer cache -> event handlers -> predicates -> [`workqueue`] ->
//! workers -> `Reconciler`. Each module is one concept, as controller-runtime has one
//! package per concept; module docs say how each relates to its neighbours.

pub mod cache;
pub mod certwatcher;
pub mod client;
pub mod conditions;
pub mod error;
pub mod config;
pub mod controller;
pub mod controllerutil;
pub mod event;
pub mod handler;
pub mod healthz;
pub mod http;
pub mod leaderelection;
pub mod log;
pub mod manager;
pub mod metrics;
pub mod metricsserver;
pub mod pprof;
pub mod predicate;
pub mod rbac;
pub mod reconcile;
pub mod recorder;
pub mod sharding;
pub mod source;
pub mod tls;
pub mod webhook;
pub mod workqueue;
