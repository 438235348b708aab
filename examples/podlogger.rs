//! PodLogger: the smallest controller-runtime program. One controller for Pods whose
//! reconciler is a plain function (Go's `reconcile.Func`) that logs `Reconciler is
//! called` with the Pod's name; the manager serves Prometheus metrics (`:8080` by
//! default) and logging is set up from controller-runtime's `--zap-*` flags
//! (`ctrl::log`, development mode unless `--zap-devel=false`).
//!
//! ```sh
//! cargo run --example podlogger                          # local demo, no cluster needed
//! cargo run --example podlogger -- --run-for 10s         # ... that exits 0 after 10 s
//! cargo run --example podlogger -- --no-demo             # ... creating no Pod
//! cargo run --example podlogger -- --zap-encoder json    # JSON lines
//! cargo run --example podlogger -- --kubeconfig ~/.kube/config   # a real cluster
//! ```
//!
//! With no cluster configured (no `--kubeconfig`, no `KUBECONFIG`, not in a pod) it
//! starts ctrl-envtest in process, prints the `--kubeconfig` line for kubectl, and
//! does what the article does by hand: `kubectl run nginx --image=nginx`, then
//! `kubectl delete pod nginx`; each event is one reconcile, counted by
//! `controller_runtime_reconcile_total{controller="pod"}` on the metrics endpoint.
//! (The examples' ctrl-envtest simulates a kubelet: binding the Pod and reporting it
//! Running are events too, so the demo shows a few more reconciles.) It has no CRD:
//! `--print-crd` prints nothing. With `--leader-elect` replicas share the Lease
//! `podlogger.ctrl.example.com`.

#[path = "podlogger/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;
use ctrl::log;

/// Logs every Pod reconcile (a ctrl example: the smallest controller).
#[derive(Parser, Debug)]
#[command(name = "podlogger")]
struct Cli {
    #[command(flatten)]
    args: OperatorArgs,
    #[command(flatten)]
    log: log::Args,
}

impl Operator for Cli {
    const NAME: &'static str = "podlogger";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[];

    fn flags(&self) -> (&Flags, Option<&Args>) {
        self.args.flags()
    }

    fn manager(&self, client: kube::Client, opts: Options) -> Deployed {
        Some(operator::manager(client, opts))
    }

    /// Go: `opts := zap.Options{Development: true}; opts.BindFlags(flag.CommandLine)`.
    fn init_logging(&self, _local: bool) {
        log::init(&self.log.apply(log::Options {
            development: true,
            ..Default::default()
        }));
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        if let Some(kc) = cluster.local_kubeconfig() {
            tracing::info!(
                "watch it:  kubectl --kubeconfig {} get pods -w",
                kc.display()
            );
        }
        let mgr = operator::manager(cluster.client(), cluster.options(&self.args.manager))?;
        let script = |client| operator::demo(client, Duration::from_secs(2));
        cluster.run_manager(&mgr, &stop, script).await
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
