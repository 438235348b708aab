//! What every ctrl example shares: the contract tests and tooling rely on, and the
//! `main` that keeps it ([`main`], [`Example`], [`Cluster`]: `program.rs`).
//!
//! - With no cluster configured ([`cli::cluster_configured`]) an example starts
//!   ctrl-envtest in process (with its simulated kubelet, so Pods run), installs
//!   its CRDs and prints a line containing
//!   `--kubeconfig <path>` ([`envtest::start`]).
//! - `--kubeconfig` / `KUBECONFIG` / in-cluster runs it against that cluster.
//! - `--no-demo` starts everything but creates no sample objects; `--run-for
//!   <duration>` exits 0 after that long ([`run::stop_token`]); `--print-crd` prints
//!   its CRDs ([`run::print_crds`]), `--print-rbac` the RBAC objects its code needs
//!   ([`rbac`]) — all in [`cli::ExampleArgs`].
//! - Log output: short lines for the local demo, tracing's full format against a
//!   cluster ([`logging`]).
//!
//! Each example mounts this folder with `#[path = "contract/mod.rs"] mod contract;`, so
//! its log targets start with the example's own name.
#![allow(dead_code)] // each example uses a different part

pub mod cli;
pub mod envtest;
pub mod leader;
pub mod logging;
pub mod program;
pub mod rbac;
pub mod run;

#[allow(unused_imports)] // the tests mount the contract too, and run no `main`
pub use program::{Cluster, Deployed, Example, main};

/// What an example's `main.rs` uses from the contract and from ctrl, in one import
/// (`use contract::prelude::*;`).
#[allow(unused_imports)]
pub mod prelude {
    pub use std::process::ExitCode;
    pub use std::time::Duration;

    pub use clap::Parser;
    pub use ctrl::CancellationToken;
    pub use ctrl::manager::{Args, BoxError, Manager, Options};
    pub use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    pub use super::cli::{ExampleArgs, OperatorArgs, parse_duration};
    pub use super::leader::{LeaderElectionFlags, log_leader_election};
    pub use super::{Cluster, Deployed, Example};
}
