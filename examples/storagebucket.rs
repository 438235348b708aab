//! The StorageBucket operator: keeps the status of `StorageBucket` custom resources
//! — buckets in an object store outside the cluster — up to date by probing them
//! over HTTP, records an Event when a bucket's availability changes, and holds a
//! finalizer on each bucket.
//!
//! ```sh
//! cargo run --example storagebucket                       # local demo, no cluster needed
//! cargo run --example storagebucket -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example storagebucket -- --no-demo          # ... with no sample buckets
//! cargo run --example storagebucket -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example storagebucket -- --print-rbac       # its RBAC, generated from the code
//! cargo run --example storagebucket -- --kubeconfig ~/.kube/config   # a real cluster
//! cargo run --example storagebucket -- --kubeconfig KC --leader-elect   # one of N replicas
//! ```
//!
//! With no cluster configured (no `--kubeconfig`, no `KUBECONFIG`, not in a pod) it
//! starts ctrl-envtest in process, installs the CRD, serves the defaulting and
//! validating webhooks (self-signed certificate) and registers them (`ctrl::cli` does,
//! from what the manager serves), starts a local
//! object store whose health flips, creates two buckets (defaulted by the webhook)
//! and a third that the validating webhook rejects, and prints what happens. With
//! `--leader-elect`, replicas share the Lease `storagebucket.storage.example.com`;
//! a replica that loses it exits non-zero. The modules are in
//! `examples/storagebucket/`.

#[path = "storagebucket/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;
use operator::{controller, crd, demo, setup};

/// The StorageBucket operator (a ctrl example).
#[derive(Parser, Debug)]
#[command(name = "storagebucket")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
    #[command(flatten)]
    leader: LeaderElectionFlags,
    /// In a cluster: serve the admission webhooks on `--webhook-port` (certificates in
    /// `--webhook-cert-path`, else made by the operator's cert rotator). The local demo
    /// always serves them.
    #[arg(long)]
    enable_webhooks: bool,
    /// How often every bucket is probed.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    probe_interval: Duration,
    /// Demo only: how often the local object store's health flips (`0s`: never).
    #[arg(long, value_name = "DURATION", default_value = "7s", value_parser = parse_duration)]
    flip_every: Duration,
}

impl Cli {
    /// The reconciler's settings: how often each bucket is probed.
    fn config(&self) -> controller::Config {
        controller::Config {
            probe_interval: self.probe_interval,
            ..Default::default()
        }
    }
}

impl Operator for Cli {
    const NAME: &'static str = "storagebucket";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[crd::crd];

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    /// The Lease of `--leader-election-id` / `--leader-election-namespace`.
    fn options(&self, opts: Options) -> Options {
        self.leader.apply(operator::LEASE_NAME, opts)
    }

    /// The manager as deployed: leader election, webhooks, the metrics flags.
    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(setup::manager(client, opts, &self.config(), true))
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        let opts = self.options(cluster.options(&self.args.manager));
        log_leader_election(&opts);
        let Some(kubeconfig) = cluster.local_kubeconfig() else {
            let mgr = setup::manager(cluster.client(), opts, &self.config(), self.enable_webhooks)?;
            // Without --webhook-cert-path, the webhooks' certificates come from its rotator.
            ctrl::cli::certs::add_rotator(Self::NAME, cluster.client(), &mgr, &self.args.manager)?;
            return Ok(mgr.start(stop).await?);
        };
        // The demo: the object store; the webhooks are served on the cli's local
        // webhook server, which registers them with the API server.
        let world =
            demo::start(cluster.client(), kubeconfig, self.flip_every, stop.clone()).await?;
        let mgr = setup::manager(cluster.client(), opts, &self.config(), true)?;
        let samples = |_client| world.create_samples();
        cluster.run_manager(&mgr, &stop, samples).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
