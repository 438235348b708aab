//! ctrl's integration tests: the example operators, derives, manifests and sharding, each against
//! ctrl-envtest.
//!
//! One binary for the files of this directory, each a module (docs/testing.md, "What the
//! repository's tests show").

#[path = "../common/mod.rs"]
mod common;
#[allow(dead_code)] // each file uses a different part
#[path = "../../examples/appservice/mod.rs"]
mod examples_appservice;
#[allow(dead_code)] // each file uses a different part
#[path = "../../examples/cronjob/mod.rs"]
mod examples_cronjob;
#[allow(dead_code)] // each file uses a different part
#[path = "../../examples/storagebucket/mod.rs"]
mod examples_storagebucket;
#[allow(dead_code)] // each file uses a different part
#[path = "../../examples/virtualmachine/mod.rs"]
mod examples_virtualmachine;
#[path = "../layout/mod.rs"]
mod layout;
#[path = "../sharding_support/mod.rs"]
mod sharding_support;
#[path = "../support/mod.rs"]
mod support;
#[path = "../tls_support/mod.rs"]
mod tls_support;

// `common` builds the StorageBucket operator's manager as `crate::operator`, as the files of
// `tests/` that declare it call it.
use examples_storagebucket as operator;

mod apply_derive;
mod appservice;
mod appservice_sharded;
mod cronjob;
mod examples_contract;
mod generated_manifests;
mod manifests;
mod rbac_rules;
mod sharding;
mod storagebucket;
mod storagebucket_leader;
mod storagebucket_webhooks;
mod virtualmachine;

/// Every `.rs` file of this directory is a module of this binary.
#[test]
fn every_file_here_is_a_module() {
    layout::assert_every_file_is_a_module(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration"
    ));
}
