//! ctrl-envtest's integration tests: the kube client, kubectl and raw HTTP against the in-process
//! API server.
//!
//! One binary for the files of this directory, each a module (docs/testing.md, "What the
//! repository's tests show").

#[path = "../layers/check.rs"]
mod check;
#[path = "../common/mod.rs"]
mod common;
#[path = "../common/kubectl_cli.rs"]
mod kubectl_cli;
#[path = "../../../tests/layout/mod.rs"]
mod layout;
#[path = "../common/webhook_server.rs"]
mod webhook_server;

mod apply;
mod authn;
mod bad_delete;
mod bad_input;
mod bad_metadata;
mod bin;
mod builtin_decode;
mod cel;
mod cluster;
mod convergence;
mod conversion;
mod crud;
mod custom;
mod defaults;
mod environment;
mod faults;
mod gc;
mod h2;
mod in_memory;
mod kubectl;
mod kubelet;
mod layers;
mod list;
mod list_pages;
mod managed_fields;
mod namespaces;
mod observers;
mod openapi;
mod patch_delete;
mod protobuf;
mod protobuf_descriptors;
mod rbac;
mod sim_webhooks;
mod strategic;
mod subresources;
mod table;
mod traceparent;
mod vap;
mod watch;
mod webhook_tls;
mod webhook_warnings;
mod webhooks;
mod workloads;
mod x509;

/// Every `.rs` file of this directory is a module of this binary.
#[test]
fn every_file_here_is_a_module() {
    layout::assert_every_file_is_a_module(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration"
    ));
}
