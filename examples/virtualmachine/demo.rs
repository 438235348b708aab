//! The local demo's script: a VirtualMachine is created, becomes `Active`, is
//! resized, stopped and deleted — each step printed with what the hypervisor holds.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::crd::{ResourceSpec, VirtualMachine, VirtualMachineSpec};
use super::hypervisor::Hypervisor;

/// The VirtualMachine the demo drives.
pub const SAMPLE: &str = "test-vm";

/// How long the demo waits for the controller at each step.
const WAIT: Duration = Duration::from_secs(10);

/// The sample, the article's own: 2 CPUs, 4G of memory, a 40G root disk.
pub fn sample() -> VirtualMachine {
    VirtualMachine::new(
        SAMPLE,
        VirtualMachineSpec {
            resource: ResourceSpec {
                cpu: Quantity("2".into()),
                memory: Quantity("4G".into()),
                root_disk: Some(Quantity("40G".into())),
            },
            action: None,
        },
    )
}

/// Runs the script in namespace `default` against `hypervisor`, pausing `pause`
/// after each step so that a person can follow it.
pub async fn run(
    client: kube::Client,
    hypervisor: &Hypervisor,
    pause: Duration,
) -> Result<(), kube::Error> {
    let api: Api<VirtualMachine> = Api::namespaced(client, "default");
    tracing::info!("creating VirtualMachine default/{SAMPLE} (2 CPU, 4G memory, 40G disk)");
    api.create(&PostParams::default(), &sample()).await?;
    show(&api, hypervisor, |vm| state(vm).is_some()).await?;

    tokio::time::sleep(pause).await;
    tracing::info!("resizing default/{SAMPLE} to 4 CPU, 8G memory");
    let resize = json!({ "spec": { "resource": { "cpu": 4, "memory": "8G" } } });
    api.patch(SAMPLE, &PatchParams::default(), &Patch::Merge(&resize))
        .await?;
    show(&api, hypervisor, |vm| {
        vm.spec.resource.cpus() == 4.0 && usage_cpu(vm) == Some(20.0)
    })
    .await?;

    tokio::time::sleep(pause).await;
    tracing::info!("stopping default/{SAMPLE} (spec.action: stop)");
    let stop = json!({ "spec": { "action": "stop" } });
    api.patch(SAMPLE, &PatchParams::default(), &Patch::Merge(&stop))
        .await?;
    show(&api, hypervisor, |vm| state(vm) == Some("Stopped")).await?;

    tokio::time::sleep(pause).await;
    tracing::info!("deleting default/{SAMPLE}");
    api.delete(SAMPLE, &DeleteParams::default()).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while api.get_opt(SAMPLE).await?.is_some() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tracing::info!(
        "default/{SAMPLE} is gone; servers on the hypervisor: {:?}",
        hypervisor.keys()
    );
    Ok(())
}

fn state(vm: &VirtualMachine) -> Option<&str> {
    vm.status
        .as_ref()?
        .server
        .as_ref()
        .map(|s| s.state.as_str())
}

fn usage_cpu(vm: &VirtualMachine) -> Option<f64> {
    Some(vm.status.as_ref()?.server.as_ref()?.usage.cpu)
}

/// Waits (up to [`WAIT`]) until the sample's status satisfies `done`, then prints it
/// and the hypervisor's server.
async fn show(
    api: &Api<VirtualMachine>,
    hypervisor: &Hypervisor,
    done: impl Fn(&VirtualMachine) -> bool,
) -> Result<(), kube::Error> {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut vm = api.get(SAMPLE).await?;
    while !done(&vm) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        vm = api.get(SAMPLE).await?;
    }
    let status = vm.status.unwrap_or_default();
    let server = status.server.unwrap_or_default();
    tracing::info!(
        "status: phase {}, server {}, usage cpu {}% memory {}%",
        status.phase.as_deref().unwrap_or("<none>"),
        server.state,
        server.usage.cpu,
        server.usage.memory
    );
    let key = format!("default/{SAMPLE}");
    if let Some(s) = hypervisor.get(&key) {
        tracing::info!("hypervisor: {key} is server {s}");
    }
    Ok(())
}
