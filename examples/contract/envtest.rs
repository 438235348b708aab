//! The local API server an example starts when no cluster is configured:
//! ctrl-envtest in process, with the example's CRDs installed, its simulated kubelet
//! on (Pods are scheduled, run and become Ready; deleted Pods terminate), and a
//! kubeconfig written for kubectl.

use std::path::Path;

use ctrl_envtest::{Environment, EnvironmentBuilder};

/// Starts `builder` (which carries the example's CRDs) with the simulated kubelet
/// on (`EnvironmentBuilder::simulate_pods`), writes its kubeconfig to
/// `kubeconfig` and logs where it is, with the `--kubeconfig <path>` line that people
/// and tools look for. `what` names what was installed, e.g. `AppService CRD`.
pub async fn start(
    builder: EnvironmentBuilder,
    kubeconfig: &Path,
    what: &str,
) -> Result<Environment, Box<dyn std::error::Error + Send + Sync>> {
    let env = builder.simulate_pods(true).start().await?;
    env.write_kubeconfig(kubeconfig)
        .map_err(|e| format!("cannot write the kubeconfig {}: {e}", kubeconfig.display()))?;
    tracing::info!(
        "API server (ctrl-envtest) at {}, {what} installed; use it with: kubectl --kubeconfig {}",
        env.url(),
        kubeconfig.display()
    );
    Ok(env)
}
