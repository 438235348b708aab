//! createonly: the controller the controller-runtime internals article ends with. It
//! is `named("appServiceController")` and has a single
//! `watches::<AppService>(handler::Funcs { .. })` whose create closure enqueues and
//! whose update and delete closures only log — so only creates are reconciled.
//! `docs/internals.md` follows one event from the watch to this reconcile.
//!
//! ```sh
//! cargo run --example createonly                       # local demo, no cluster needed
//! cargo run --example createonly -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example createonly -- --no-demo          # ... creating no AppService
//! cargo run --example createonly -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example createonly -- --kubeconfig ~/.kube/config   # a real cluster
//! ```
//!
//! With no cluster configured it starts ctrl-envtest in process with the AppService
//! CRD, prints the `--kubeconfig` line for kubectl, then creates
//! `example-appservice`, scales it and deletes it: three events, one reconcile
//! (a `Reconciled` Event on the object). With `--leader-elect` replicas share the
//! Lease `createonly.app.example.com`. The modules are in `examples/createonly/`.

#[path = "createonly/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;
use operator::{controller, crd, demo};

/// Reconciles AppServices on create only (a ctrl example: the internals article's controller).
#[derive(Parser, Debug)]
#[command(name = "createonly")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
}

/// A manager on `client` with the controller; the Lease is `controller::LEASE`
/// unless `opts` names one.
fn manager(client: kube::Client, mut opts: Options) -> Result<Manager, BoxError> {
    if opts.leader_election_id.is_empty() {
        opts.leader_election_id = controller::LEASE.into();
    }
    // Reads see the controller's own writes (client::CacheOptions; docs/cache-and-client.md).
    opts.client.cache.read_your_writes_consistency_enabled = true;
    let mgr = Manager::new(client, opts)?;
    controller::setup(&mgr)?;
    Ok(mgr)
}

impl Operator for Cli {
    const NAME: &'static str = "createonly";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[crd::crd];

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(manager(client, opts))
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        if let Some(kc) = cluster.local_kubeconfig() {
            let kc = kc.display();
            tracing::info!(target: "createonly::envtest", "watch it:  kubectl --kubeconfig {kc} get appservices -w");
            tracing::info!(target: "createonly::envtest", "reconciles: kubectl --kubeconfig {kc} get events --field-selector reason={}", controller::REASON);
        }
        let mgr = manager(cluster.client(), cluster.options(&self.args.manager))?;
        let script = |client| demo::run(client, Duration::from_secs(2));
        cluster.run_manager(&mgr, &stop, script).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
