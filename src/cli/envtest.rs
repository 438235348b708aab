//! The local API server an operator starts when no cluster is configured (feature
//! `envtest`): ctrl-envtest in process, with the operator's CRDs installed, its
//! simulated kubelet on (Pods are scheduled, run and become Ready; deleted Pods
//! terminate), a kubeconfig written for kubectl, and a webhook server whose webhooks
//! are registered with it ([`LocalWebhooks`]; without the `webhook` feature a stand-in that
//! serves and registers nothing, so that the same test code runs with and without it).

use std::path::Path;

use ctrl_envtest::{Environment, EnvironmentBuilder};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

#[cfg(feature = "webhook")]
#[path = "local_webhooks.rs"]
mod local_webhooks;
#[cfg(not(feature = "webhook"))]
#[path = "no_webhooks.rs"]
mod local_webhooks;
pub use local_webhooks::LocalWebhooks;

/// Starts `builder` (which carries the operator's CRDs) with the simulated kubelet
/// on (`EnvironmentBuilder::simulate_pods`), writes its kubeconfig to
/// `kubeconfig` and logs where it is, with the `--kubeconfig <path>` line that people
/// and tools look for. `what` names what was installed, e.g. `AppService CRD`. (The
/// line's target is `ctrl::cli::envtest`, which [`super::logging`]'s demo filter shows.)
pub async fn start(
    builder: EnvironmentBuilder,
    kubeconfig: &Path,
    what: &str,
) -> Result<Environment, Box<dyn std::error::Error + Send + Sync>> {
    let env = builder.simulate_pods(true).start().await?;
    env.write_kubeconfig(kubeconfig)
        .map_err(|e| format!("cannot write the kubeconfig {}: {e}", kubeconfig.display()))?;
    tracing::info!(
        target: "ctrl::cli::envtest",
        "API server (ctrl-envtest) at {}, {what} installed; use it with: kubectl --kubeconfig {}",
        env.url(),
        kubeconfig.display()
    );
    Ok(env)
}

/// [`start`] with `crds` installed, naming them in the log line (`AppService CRD`).
pub async fn start_with_crds(
    crds: Vec<CustomResourceDefinition>,
    kubeconfig: &Path,
) -> Result<Environment, Box<dyn std::error::Error + Send + Sync>> {
    let kinds: Vec<&str> = crds.iter().map(|c| c.spec.names.kind.as_str()).collect();
    let what = match kinds.is_empty() {
        true => "no CRD".to_string(),
        false => format!("{} CRD", kinds.join(", ")),
    };
    let builder = crds
        .into_iter()
        .fold(Environment::builder(), |b, crd| b.crd(crd));
    start(builder, kubeconfig, &what).await
}
