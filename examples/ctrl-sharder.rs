//! `ctrl-sharder`: the sharder of kubernetes-controller-sharding as its own process, as
//! upstream deploys its sharder: it shards every `ControllerRing` of the cluster for
//! shards written in any language (a shard only holds its Lease and reconciles the
//! objects labelled with its name; see `docs/sharding.md`).
//!
//! ```sh
//! cargo run --example ctrl-sharder                      # local demo, no cluster needed
//! cargo run --example ctrl-sharder -- --run-for 10s     # ... that exits 0 after 10 s
//! cargo run --example ctrl-sharder -- --print-crd       # the ControllerRing CRD
//! cargo run --example ctrl-sharder -- --kubeconfig KC \
//!     --webhook-url https://sharder.example:9443 --webhook-cert-dir DIR --webhook-ca-file CA
//! ```
//!
//! It always runs under leader election (a ring has one active sharder; replicas
//! wait), on Lease `ctrl-sharder` unless `--leader-election-id` names another. The
//! active one runs `ctrl::sharding::RingSharders`: per ring the webhook (served here,
//! registered in the ring's MutatingWebhookConfiguration with `--webhook-url`), the
//! lease takeover, the sync and the ring's status. Without `--webhook-cert-dir` it
//! serves a fresh self-signed certificate for `localhost` and `127.0.0.1`, enough for a
//! local API server such as `ctrl-envtest serve`.
//!
//! With no cluster configured it starts ctrl-envtest in process with the ControllerRing
//! CRD and, unless `--no-demo`, a ring `demo` over the ConfigMaps of namespaces labelled
//! `sharding-demo=true`, two shards that do nothing but hold their Leases (as a shard in
//! another language would), and a few ConfigMaps it shows being assigned.

#[path = "ctrl_sharder/mod.rs"]
mod sharder;

use ctrl::cli::prelude::*;
use ctrl::sharding::controllerring_crd;
use sharder::cli::Cli;

impl Operator for Cli {
    const NAME: &'static str = "ctrl-sharder";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[controllerring_crd];

    fn flags(&self) -> (&Flags, Option<&Args>) {
        (&self.flags, Some(&self.manager))
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(sharder::run::manager(client, self, opts, "127.0.0.1:0"))
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        sharder::run::run(&self, cluster, stop).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
