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

#[path = "contract/mod.rs"]
mod contract;
#[path = "podlogger/mod.rs"]
mod operator;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use contract::cli::{ExampleArgs, cluster_configured, local_options};
use contract::run;
use ctrl::log;
use ctrl::manager::Args;

/// The program's command line: the example contract, kubebuilder's manager flags and
/// controller-runtime's zap flags.
#[derive(Parser, Debug)]
#[command(
    name = "podlogger",
    about = "Logs every Pod reconcile (a ctrl example: the smallest controller)"
)]
struct Cli {
    #[command(flatten)]
    example: ExampleArgs,
    #[command(flatten)]
    manager: Args,
    #[command(flatten)]
    log: log::Args,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.example.print_crd {
        return run::print_crds(&[]);
    }
    if cli.example.print_rbac {
        let opts = contract::rbac::deployed_options("podlogger", cli.manager.options());
        return contract::rbac::print("podlogger", |c| operator::manager(c, opts)).await;
    }
    // Go: `opts := zap.Options{Development: true}; opts.BindFlags(flag.CommandLine)`.
    log::init(&cli.log.apply(log::Options {
        development: true,
        ..Default::default()
    }));
    let demo = !cluster_configured(cli.manager.kubeconfig.as_deref());
    run::exit(start(cli, demo).await)
}

async fn start(cli: Cli, demo: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let stop = run::stop_token(cli.example.run_for);
    if !demo {
        let client = cli.manager.client().await?;
        let mgr = operator::manager(client, cli.manager.options()).await?;
        return Ok(mgr.start(stop).await?);
    }
    let kubeconfig = cli.example.kubeconfig_path("podlogger");
    let builder = ctrl_envtest::Environment::builder();
    let env = contract::envtest::start(builder, &kubeconfig, "nothing").await?;
    tracing::info!(
        "watch it:  kubectl --kubeconfig {} get pods -w",
        kubeconfig.display()
    );
    let mgr = operator::manager(env.client(), local_options(&cli.manager)).await?;
    if let Some(url) = run::metrics_url(&mgr) {
        tracing::info!("metrics:   {url}");
    }
    let script =
        (!cli.example.no_demo).then(|| operator::demo(env.client(), Duration::from_secs(2)));
    run::manager_with_demo(&mgr, &stop, script).await?;
    env.stop();
    Ok(())
}
