//! kubebuilder's CronJob tutorial ("Tutorial: Building CronJob") ported to ctrl: a
//! `CronJob` custom resource (`batch.tutorial.kubebuilder.io/v1`) that runs a Job at each
//! time of its cron schedule, with a starting deadline, a concurrency policy
//! (`Allow` / `Forbid` / `Replace`), `suspend` and history limits, and a defaulting and a
//! validating webhook. Written on `ctrl::cli` as a `cargo ctrl` project is;
//! docs/tutorial.md builds it step by step.
//!
//! ```sh
//! cargo run --example cronjob                       # local demo, no cluster needed
//! cargo run --example cronjob -- --run-for 8s       # ... that exits 0 after 8 s
//! cargo run --example cronjob -- --no-demo          # ... with no sample CronJobs
//! cargo run --example cronjob -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example cronjob -- --print-manifests  # everything a cluster needs
//! ENABLE_WEBHOOKS=false cargo run --example cronjob -- --kubeconfig ~/.kube/config
//! ```
//!
//! The webhooks are served unless `ENABLE_WEBHOOKS=false` (kubebuilder's switch: outside
//! a cluster the manager has no serving certificate). With no cluster configured it
//! starts ctrl-envtest in process (with its Job controller
//! and simulated kubelet, so Jobs run and complete), serves and registers the webhooks,
//! prints the `--kubeconfig <path>` line for kubectl, and creates the sample (every
//! minute) and `every-2s`. The modules are in `examples/cronjob/`.

#[path = "cronjob/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;

/// The CronJob operator (kubebuilder's tutorial, a ctrl example).
#[derive(Parser, Debug)]
#[command(name = "cronjob")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
}

impl Operator for Cli {
    const NAME: &'static str = "cronjob";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = operator::CRDS;

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    /// The Lease replicas compete for with `--leader-elect`.
    fn options(&self, opts: Options) -> Options {
        Options {
            leader_election_id: "cronjob.tutorial.kubebuilder.io".into(),
            ..opts
        }
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(operator::manager(client, opts))
    }

    fn env(&self) -> Vec<(String, String)> {
        operator::env()
    }

    async fn demo(&self, client: kube::Client) -> Result<(), kube::Error> {
        operator::create_samples(client).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
