//! The memcached-operator operator's `main`: kubebuilder's manager flags, the choice of
//! cluster (`--kubeconfig`, `KUBECONFIG`, in-cluster, else an in-process API server),
//! `--run-for`, `--no-demo`, `--print-crd`, `--print-rbac`, `--print-manifests`, all
//! from `ctrl::cli`. `cargo run -- --help` lists the flags.

use ctrl::cli::prelude::*;

/// The memcached-operator operator.
#[derive(Parser, Debug)]
#[command(name = "memcached-operator")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
}

impl Operator for Cli {
    const NAME: &'static str = "memcached-operator";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = memcached_operator::CRDS;

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    /// The Lease replicas compete for with `--leader-elect`.
    fn options(&self, opts: Options) -> Options {
        Options {
            leader_election_id: "memcached-operator.example.com".into(),
            ..opts
        }
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(memcached_operator::manager(client, opts))
    }

    fn env(&self) -> Vec<(String, String)> {
        memcached_operator::env()
    }

    async fn demo(&self, client: kube::Client) -> Result<(), kube::Error> {
        memcached_operator::create_samples(client).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
