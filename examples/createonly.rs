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

#[path = "contract/mod.rs"]
mod contract;
#[path = "createonly/mod.rs"]
mod operator;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use contract::cli::{ExampleArgs, cluster_configured, local_options};
use contract::{logging, run};
use ctrl::manager::{Args, BoxError, Manager, Options};
use operator::{controller, crd, demo};

/// The program's command line: the example contract and kubebuilder's manager flags.
#[derive(Parser, Debug)]
#[command(
    name = "createonly",
    about = "Reconciles AppServices on create only (a ctrl example: the internals article's controller)"
)]
struct Cli {
    #[command(flatten)]
    example: ExampleArgs,
    #[command(flatten)]
    manager: Args,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.example.print_crd {
        return run::print_crds(&[crd::crd()]);
    }
    if cli.example.print_rbac {
        let opts = contract::rbac::deployed_options("createonly", cli.manager.options());
        return contract::rbac::print("createonly", |c| manager(c, opts)).await;
    }
    let demo = !cluster_configured(cli.manager.kubeconfig.as_deref());
    logging::init("createonly", demo);
    run::exit(start(cli, demo).await)
}

/// A manager on `client` with the controller; the Lease is `controller::LEASE`
/// unless `opts` names one.
async fn manager(client: kube::Client, mut opts: Options) -> Result<Manager, BoxError> {
    if opts.leader_election_id.is_empty() {
        opts.leader_election_id = controller::LEASE.into();
    }
    let mgr = Manager::new(client, opts)?;
    controller::setup(&mgr).await?;
    Ok(mgr)
}

async fn start(cli: Cli, demo: bool) -> Result<(), BoxError> {
    let stop = run::stop_token(cli.example.run_for);
    if !demo {
        let mgr = manager(cli.manager.client().await?, cli.manager.options()).await?;
        return Ok(mgr.start(stop).await?);
    }
    let kubeconfig = cli.example.kubeconfig_path("createonly");
    let builder = ctrl_envtest::Environment::builder().crd(crd::crd());
    let env = contract::envtest::start(builder, &kubeconfig, "AppService CRD").await?;
    let kc = kubeconfig.display();
    tracing::info!(target: "createonly::envtest", "watch it:  kubectl --kubeconfig {kc} get appservices -w");
    tracing::info!(target: "createonly::envtest", "reconciles: kubectl --kubeconfig {kc} get events --field-selector reason={}", controller::REASON);
    let mgr = manager(env.client(), local_options(&cli.manager)).await?;
    let script = (!cli.example.no_demo).then(|| demo::run(env.client(), Duration::from_secs(2)));
    run::manager_with_demo(&mgr, &stop, script).await?;
    env.stop();
    Ok(())
}
