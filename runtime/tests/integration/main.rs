//! ctrl-runtime's integration tests: caches, clients, controllers, managers and webhooks against
//! ctrl-envtest.
//!
//! One binary for the files of this directory, each a module (docs/testing.md, "What the
//! repository's tests show").

#[path = "../../../envtest/tests/layers/check.rs"]
mod check;
#[path = "../../../tests/layout/mod.rs"]
mod layout;
#[path = "../leaderelection_common/mod.rs"]
mod leaderelection_common;
#[path = "../manager_common/mod.rs"]
mod manager_common;
#[path = "../multicluster_support/mod.rs"]
mod multicluster_support;
#[path = "../support/mod.rs"]
mod support;
#[path = "../webhook_support/mod.rs"]
mod webhook_support;

mod cache_index;
mod cache_informer;
mod cache_kind;
mod cache_kind_sync;
mod cache_options;
mod cache_streaming_list;
mod certrotator;
mod client_apply_config;
mod client_dynamic;
mod client_options;
mod client_rw;
mod conditions;
mod controller_handlers;
mod controllerutil_create;
mod controllerutil_finalizer;
mod layers;
mod leaderelection_custom;
mod leaderelection_failover;
mod leaderelection_lease;
mod leaderelection_renew;
mod leaderelection_warmup;
mod log;
mod manager_lifecycle;
mod manager_pprof;
mod manager_webhook;
mod multicluster_providers;
mod multicluster_replicas;
mod otel_off;
mod recorder_events;
mod webhook_handlers;
mod workqueue_add_ref;
mod workqueue_fairness;
mod workqueue_queue;

/// Every `.rs` file of this directory is a module of this binary.
#[test]
fn every_file_here_is_a_module() {
    layout::assert_every_file_is_a_module(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration"
    ));
}
