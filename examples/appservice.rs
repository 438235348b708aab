//! The AppService operator, the Operator SDK walkthrough in ctrl: an `AppService`
//! custom resource asks for `spec.size` Pods of `spec.image`; the controller keeps
//! exactly that many (`<name>-pod-<i>`, controller-owned, so garbage collection
//! removes them with their AppService), reports them in `status.nodes` with an
//! `Available` condition, and holds a finalizer that records a `Deleting` Event.
//!
//! ```sh
//! cargo run --example appservice                       # local demo, no cluster needed
//! cargo run --example appservice -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example appservice -- --no-demo          # ... with no sample AppService
//! cargo run --example appservice -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example appservice -- --kubeconfig ~/.kube/config   # a real cluster
//! cargo run --example appservice -- --kubeconfig KC --leader-elect   # one of N replicas
//! cargo run --example appservice -- --kubeconfig KC --sharded        # one of N shards
//! cargo run --example appservice -- --kubeconfig KC --sharded --sharder=false  # ... with ctrl-sharder
//! ```
//!
//! With `--sharded` every replica reconciles its share of the AppServices (ring
//! `appservice`, see `examples/appservice/sharding.rs` and `docs/sharding.md`).
//!
//! With no cluster configured (no `--kubeconfig`, no `KUBECONFIG`, not in a pod) it
//! starts ctrl-envtest in process with the CRD and its simulated kubelet (Pods get
//! a node, run and become Ready; deleted Pods terminate), creates
//! `example-appservice` with 3 Pods, scales it to 5, deletes a Pod and shows it come
//! back. The modules are in `examples/appservice/`.

#[path = "appservice/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;
use operator::sharding::ShardingFlags;
use operator::{controller, crd, demo, setup, sharding};

/// The AppService operator (a ctrl example).
#[derive(Parser, Debug)]
#[command(name = "appservice")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
    #[command(flatten)]
    leader: LeaderElectionFlags,
    #[command(flatten)]
    sharding: ShardingFlags,
    /// Every AppService is reconciled again this long after its last reconcile.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    resync_period: Duration,
}

impl Cli {
    /// The controller's configuration from the flags.
    fn config(&self) -> controller::Config {
        controller::Config {
            resync_period: self.resync_period,
            ..Default::default()
        }
    }

    /// The operator's manager: plain, or with `--sharded` a shard of ring `appservice`
    /// beside the controller (`operator::sharding`: it installs the ControllerRing CRD
    /// and the ring first, and runs the sharder when it holds the sharder's Lease).
    async fn manager(&self, client: kube::Client, opts: Options) -> Result<Manager, BoxError> {
        let namespace = opts.leader_election_namespace.clone();
        let shard = self
            .sharding
            .shard(namespace.as_deref().unwrap_or("default"));
        let mgr = match shard {
            None => setup::manager(client, opts, &self.config())?,
            Some(shard) => {
                let sharder = self.sharding.sharder;
                sharding::manager(client, opts, &self.config(), shard, sharder).await?
            }
        };
        log_leader_election(mgr.options());
        Ok(mgr)
    }
}

impl Operator for Cli {
    const NAME: &'static str = "appservice";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[crd::crd];

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    /// The Lease of `--leader-election-id` / `--leader-election-namespace`.
    fn options(&self, opts: Options) -> Options {
        self.leader.apply(setup::DEFAULT_LEASE_NAME, opts)
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(setup::manager(client, opts, &self.config()))
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        if let Some(kubeconfig) = cluster.local_kubeconfig() {
            demo::watch_hints(kubeconfig);
        }
        let opts = self.options(cluster.options(&self.args.manager));
        let mgr = self.manager(cluster.client(), opts).await?;
        let script = |client| demo::run(client, &stop);
        cluster.run_manager(&mgr, &stop, script).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
