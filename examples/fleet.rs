//! The fleet operator: a hub operator that keeps a ConfigMap in every member cluster
//! a `FleetConfigMap` (`fleet.example.com/v1`) selects, and reports per member in the
//! hub object's `status.clusters`. Members are kubeconfig Secrets on the hub
//! (multicluster-runtime's conventions: label `sigs.k8s.io/multicluster-runtime-kubeconfig:
//! "true"`, key `kubeconfig`, the cluster named after the Secret) in
//! `--cluster-secrets-namespace`; `spec.clusterSelector` matches their labels. Each
//! copy carries `fleet.example.com/written-by: <replica identity>`.
//!
//! ```sh
//! cargo run --example fleet                          # a hub and three members in process
//! cargo run --example fleet -- --run-for 10s         # ... that exits 0 after 10 s
//! cargo run --example fleet -- --print-crd           # the CRD, for kubectl apply -f -
//! cargo run --example fleet -- --kubeconfig HUB      # a real hub (run it twice: two replicas)
//! ```
//!
//! Several replicas share the members: each member is worked on by exactly one
//! replica (rendezvous hashing over peer Leases plus a fence Lease per member, in
//! `--cluster-secrets-namespace`), and a killed replica's members move to the others
//! once `--cluster-lease-duration` has passed. Each replica logs its identity at start.
//!
//! With no cluster configured it starts the hub (with the CRD) and three members
//! (`member-1` `env=dev`, `member-2` `env=prod`, `member-3` `env=staging`) in process,
//! prints a kubeconfig for each, and creates `default/example-settings` for
//! `env in (dev, prod)`. The modules are in `examples/fleet/`.

#[path = "contract/mod.rs"]
mod contract;
#[path = "fleet/mod.rs"]
mod operator;

use contract::prelude::*;
use ctrl::multicluster::{self, Coordinator, CoordinatorConfig, KubeconfigSecretProvider};
use operator::controller::{self, Fleet};
use operator::{crd, demo, members};

/// The fleet operator (a ctrl example).
#[derive(Parser, Debug)]
#[command(name = "fleet")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
    /// The namespace of the members' kubeconfig Secrets on the hub (and of the
    /// replicas' peer and fence Leases).
    #[arg(long, value_name = "NAMESPACE", default_value = "default")]
    cluster_secrets_namespace: String,
    /// This replica's identity (default: the host name and a random suffix).
    #[arg(long, value_name = "NAME")]
    identity: Option<String>,
    /// How long a dead replica's members wait before another replica takes them.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration)]
    cluster_lease_duration: Duration,
}

impl Cli {
    /// The hub manager, the multi-cluster manager over it, and the controller.
    fn manager(
        &self,
        hub: kube::Client,
        opts: Options,
    ) -> Result<(Manager, multicluster::Manager), BoxError> {
        let local = Manager::new(hub.clone(), opts)?;
        let mut cfg = CoordinatorConfig {
            namespace: self.cluster_secrets_namespace.clone(),
            lease_duration: self.cluster_lease_duration,
            peer_ttl: self.cluster_lease_duration,
            ..Default::default()
        };
        cfg.probe = cfg.probe.min(self.cluster_lease_duration / 3);
        if let Some(id) = &self.identity {
            cfg.identity = multicluster::dns1123(id);
        }
        let identity = cfg.identity.clone();
        tracing::info!(%identity, "fleet replica {identity} starting");
        let mgr = Coordinator::manager(local.clone(), cfg)?;
        let ns = self.cluster_secrets_namespace.clone();
        mgr.add_provider(KubeconfigSecretProvider::new(hub.clone(), &ns))?;
        controller::setup(Fleet {
            mgr: mgr.clone(),
            hub,
            secrets_namespace: ns,
            identity,
        })?;
        Ok((local, mgr))
    }
}

impl Example for Cli {
    const NAME: &'static str = "fleet";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[crd::crd];

    fn flags(&self) -> (&ExampleArgs, Option<&Args>) {
        self.args.flags()
    }

    /// Replicas share the members through the coordinator's Leases, not leader
    /// election; a Lease name is still set so that `--leader-elect` works.
    fn options(&self, opts: Options) -> Options {
        let id = match opts.leader_election_id.as_str() {
            "" => "fleet.example.com".to_string(),
            id => id.to_string(),
        };
        Options {
            leader_election_id: id,
            ..opts
        }
    }

    fn deployed_manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(self.manager(client, opts).map(|(local, _)| local))
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        let hub = cluster.client();
        let opts = cluster.options(&self.args.manager);
        let (local, _mgr) = self.manager(hub.clone(), opts)?;
        let members = match cluster.local_kubeconfig() {
            Some(kubeconfig) => {
                let members =
                    members::start(&hub, kubeconfig, &self.cluster_secrets_namespace).await?;
                demo::watch_hints(kubeconfig, &members);
                members
            }
            None => Vec::new(),
        };
        let clients: Vec<kube::Client> = members.iter().map(|m| m.env.client()).collect();
        let script = |client| demo::run(client, clients, &stop);
        let res = cluster.run_manager(&local, &stop, script).await;
        for m in &members {
            m.env.stop();
        }
        res
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    contract::main::<Cli>().await
}
