//! virtualmachine: the client-go sample-controller, on ctrl's pieces but without a
//! Manager or a Builder — a shared informer and its lister from ctrl's cache, a
//! `RateLimitingQueue` with `default_controller_rate_limiter`, `--threadiness`
//! workers, `process_next_work_item` / `sync_handler`. The controller keeps a fake
//! in-process hypervisor in line with `VirtualMachine` objects
//! (`cloudnative.tw/v1alpha1`) and writes their status.
//!
//! ```sh
//! cargo run --example virtualmachine                       # local demo, no cluster needed
//! cargo run --example virtualmachine -- --run-for 15s      # ... that exits 0 after 15 s
//! cargo run --example virtualmachine -- --no-demo          # ... creating no VirtualMachine
//! cargo run --example virtualmachine -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example virtualmachine -- --kubeconfig ~/.kube/config --threadiness 4
//! ```
//!
//! With no cluster configured it starts ctrl-envtest in process with the CRD, prints
//! the `--kubeconfig` line for kubectl, and creates `test-vm`, which becomes
//! `Active`; then resizes it, stops it and deletes it (the finalizer deletes the
//! server first). Ctrl-C shuts the queue down and lets the workers drain it. The
//! modules are in `examples/virtualmachine/`.

#[path = "contract/mod.rs"]
mod contract;
#[path = "virtualmachine/mod.rs"]
mod operator;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use contract::cli::{ExampleArgs, cluster_configured};
use contract::{logging, run};
use ctrl::manager::load_config;
use operator::controller::{self, Error};
use operator::hypervisor::Hypervisor;
use operator::{crd, demo};

/// The program's command line: the example contract, the kubeconfig and the number
/// of workers (the sample-controller's flags).
#[derive(Parser, Debug)]
#[command(
    name = "virtualmachine",
    about = "Keeps a fake hypervisor in line with VirtualMachines (a ctrl example: the client-go sample-controller)"
)]
struct Cli {
    #[command(flatten)]
    example: ExampleArgs,
    /// Path to a kubeconfig. Only required if out-of-cluster.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// How many workers process the queue at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    threadiness: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.example.print_crd {
        return run::print_crds(&[crd::crd()]);
    }
    if cli.example.print_rbac {
        // Like Go's sample-controller it runs no Manager, so there is nothing to ask.
        eprintln!("virtualmachine runs no ctrl Manager: --print-rbac has no rules to print");
        return ExitCode::FAILURE;
    }
    let demo = !cluster_configured(cli.kubeconfig.as_deref());
    logging::init("virtualmachine", demo);
    run::exit(start(cli, demo).await)
}

async fn start(cli: Cli, demo: bool) -> Result<(), Error> {
    let stop = run::stop_token(cli.example.run_for);
    let hypervisor = Hypervisor::new();
    if !demo {
        let client = kube::Client::try_from(load_config(cli.kubeconfig.as_deref()).await?)?;
        return controller::run(client, hypervisor, cli.threadiness, stop).await;
    }
    let kubeconfig = cli.example.kubeconfig_path("virtualmachine");
    let builder = ctrl_envtest::Environment::builder().crd(crd::crd());
    let env = contract::envtest::start(builder, &kubeconfig, "VirtualMachine CRD").await?;
    let kc = kubeconfig.display();
    tracing::info!(target: "virtualmachine::envtest", "watch it:  kubectl --kubeconfig {kc} get virtualmachines -w -o 'custom-columns=NAME:.metadata.name,PHASE:.status.phase,STATE:.status.server.state,CPU:.spec.resource.cpu,CPU%:.status.server.usage.cpu'");
    let running = {
        let (client, hv, stop) = (env.client(), hypervisor.clone(), stop.clone());
        tokio::spawn(controller::run(client, hv, cli.threadiness, stop))
    };
    if !cli.example.no_demo {
        tokio::select! {
            r = demo::run(env.client(), &hypervisor, Duration::from_secs(2)) => r?,
            _ = stop.cancelled() => {}
        }
    }
    running.await??;
    env.stop();
    Ok(())
}
