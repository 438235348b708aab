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

#[path = "virtualmachine/mod.rs"]
mod operator;

use ctrl::cli::prelude::*;
use operator::hypervisor::Hypervisor;
use operator::{controller, crd, demo};
use std::path::{Path, PathBuf};

/// Keeps a fake hypervisor in line with VirtualMachines (a ctrl example: the client-go sample-controller).
#[derive(Parser, Debug)]
#[command(name = "virtualmachine")]
struct Cli {
    #[command(flatten)]
    flags: Flags,
    /// Path to a kubeconfig. Only required if out-of-cluster.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// How many workers process the queue at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    threadiness: usize,
}

impl Operator for Cli {
    const NAME: &'static str = "virtualmachine";

    const CRDS: &'static [fn() -> CustomResourceDefinition] = &[crd::crd];

    /// The cli's flags; no Manager, so no kubebuilder flags.
    fn flags(&self) -> (&Flags, Option<&Args>) {
        (&self.flags, None)
    }

    /// The sample-controller's own `--kubeconfig`.
    fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// Like Go's sample-controller it runs no Manager, so there is nothing to ask.
    fn manager(&self, _: kube::Client, _: Options) -> Deployed {
        None
    }

    async fn run(self, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
        if let Some(kc) = cluster.local_kubeconfig() {
            let kc = kc.display();
            tracing::info!(target: "virtualmachine::envtest", "watch it:  kubectl --kubeconfig {kc} get virtualmachines -w -o 'custom-columns=NAME:.metadata.name,PHASE:.status.phase,STATE:.status.server.state,CPU:.spec.resource.cpu,CPU%:.status.server.usage.cpu'");
        }
        let hypervisor = Hypervisor::new();
        let running = {
            let (client, hv, stop) = (cluster.client(), hypervisor.clone(), stop.clone());
            tokio::spawn(controller::run(client, hv, self.threadiness, stop))
        };
        if cluster.demo() {
            tokio::select! {
                r = demo::run(cluster.client(), &hypervisor, Duration::from_secs(2)) => r?,
                _ = stop.cancelled() => {}
            }
        }
        running.await?
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    ctrl::cli::main::<Cli>().await
}
