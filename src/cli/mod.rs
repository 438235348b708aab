//! The operator's `main` as a library (what kubebuilder scaffolds into `cmd/main.go`):
//! an operator says what it is ([`Operator`]: its name, CRDs, flags, and how it builds
//! its manager), and [`main`] keeps the contract people and tools rely on.
//!
//! - kubebuilder's manager flags ([`manager::Args`](crate::manager::Args)) and the
//!   operator's own, flattened into one clap parser with [`Flags`] ([`OperatorArgs`]).
//! - The cluster: `--kubeconfig`, `KUBECONFIG`, or the pod's service account; with none of
//!   them (and the `envtest` feature) ctrl-envtest starts in process, with the operator's
//!   CRDs and its simulated kubelet, and a line containing `--kubeconfig <path>` is
//!   printed for kubectl ([`Cluster`]). Without the feature, controller-runtime's
//!   `GetConfig` order applies (`~/.kube/config` last).
//! - `--no-demo` starts everything but creates no sample objects; `--run-for <duration>`
//!   exits 0 after that long; Ctrl-C and SIGTERM stop gracefully ([`run::stop_token`]).
//! - `--print-crd`, `--print-rbac`, `--print-manifests` print what the code needs in a
//!   cluster, from the manager the operator builds (on a client that is never dialled,
//!   [`print`](mod@print)), and exit.
//! - Webhook certificates on a cluster (feature `webhook`): the operator's own cert rotator
//!   unless `--webhook-cert-path` is given (`certs`).
//! - Log output: short lines for the local demo, tracing's full format against a
//!   cluster ([`logging`]).
//!
//! ```no_run
//! use ctrl::cli::prelude::*;
//!
//! /// My operator.
//! #[derive(Parser, Debug)]
//! struct Cli {
//!     #[command(flatten)]
//!     args: OperatorArgs,
//! }
//!
//! impl Operator for Cli {
//!     const NAME: &'static str = "my-operator";
//!     const CRDS: &'static [fn() -> CustomResourceDefinition] = &[];
//!
//!     fn flags(&self) -> (&Flags, Option<&Args>) {
//!         self.args.flags()
//!     }
//!
//!     fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
//!         Some(Manager::new(client, opts).map_err(Into::into))
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> ExitCode {
//!     ctrl::cli::main::<Cli>().await
//! }
//! ```
//!
//! Neighbours: [`crate::manager`] (the flags' options), [`crate::rbac`] (the rules
//! `--print-rbac` prints), [`crate::manifests`] (what `--print-manifests` prints).

pub mod args;
#[cfg(feature = "webhook")]
pub mod certs;
#[cfg(feature = "envtest")]
pub mod envtest;
pub mod leader;
pub mod logging;
pub mod print;
mod program;
pub mod run;

pub use args::{Flags, OperatorArgs, parse_duration};
pub use leader::LeaderElectionFlags;
pub use program::{Cluster, Deployed, Operator, main};

/// What an operator's `main.rs` uses from the cli and from ctrl, in one import
/// (`use ctrl::cli::prelude::*;`).
pub mod prelude {
    pub use std::process::ExitCode;
    pub use std::time::Duration;

    pub use crate::CancellationToken;
    pub use crate::manager::{Args, BoxError, Manager, Options};
    pub use clap::Parser;
    pub use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    pub use super::leader::log_leader_election;
    pub use super::{
        Cluster, Deployed, Flags, LeaderElectionFlags, Operator, OperatorArgs, parse_duration,
    };
}
