//! ctrl-builder's integration tests: controllers built with For / Owns / Watches, run by a manager
//! against ctrl-envtest.
//!
//! One binary for the files of this directory, each a module (docs/testing.md, "What the
//! repository's tests show").

#[path = "../common/mod.rs"]
mod common;
#[path = "../../../tests/layout/mod.rs"]
mod layout;
#[path = "../../../runtime/tests/multicluster_support/mod.rs"]
mod multicluster_support;

mod builder_config;
mod builder_deployment;
mod builder_dynamic;
mod builder_errors;
mod builder_multicluster;
mod builder_read_your_writes;
mod builder_watches;

/// Every `.rs` file of this directory is a module of this binary.
#[test]
fn every_file_here_is_a_module() {
    layout::assert_every_file_is_a_module(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration"
    ));
}
