//! The local demo: with no cluster configured, the operator runs on the API server
//! `ctrl::cli` starts — ctrl-envtest with the AppService CRD and the simulated
//! kubelet (so Pods become `Running` and `Ready`, and deleted Pods terminate) — and
//! walks through the walkthrough's story: create `example-appservice` with 3 Pods,
//! scale it to 5, delete one Pod and watch the controller bring it back.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use ctrl::CancellationToken;
use ctrl::conditions;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::controller::pod_name;
use super::crd::{AppService, AppServiceSpec, CONDITION_AVAILABLE};

/// The sample the demo creates.
pub const SAMPLE: &str = "example-appservice";

/// Says how to watch the demo with kubectl on the local API server's `kubeconfig`.
pub fn watch_hints(kubeconfig: &Path) {
    let kc = kubeconfig.display();
    tracing::info!(target: "appservice::envtest", "watch it:  kubectl --kubeconfig {kc} get appservices,pods -o wide -w");
    tracing::info!(target: "appservice::envtest", "details:   kubectl --kubeconfig {kc} describe appservice {SAMPLE}");
}

/// The walkthrough's story on `client`, until done or `stop`.
pub async fn run(client: kube::Client, stop: &CancellationToken) -> Result<(), kube::Error> {
    let apps: Api<AppService> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    tracing::info!(target: "appservice::demo", "creating AppService default/{SAMPLE} (size 3, image busybox)");
    let spec = AppServiceSpec {
        size: 3,
        ..Default::default()
    };
    apps.create(&PostParams::default(), &AppService::new(SAMPLE, spec))
        .await?;
    if !wait(stop, || available(&apps, 3)).await? {
        return Ok(());
    }
    tracing::info!(target: "appservice::demo", "default/{SAMPLE} is Available: 3/3 Pods ready");

    tracing::info!(target: "appservice::demo", "scaling default/{SAMPLE} to 5");
    let scale = Patch::Merge(json!({"spec": {"size": 5}}));
    apps.patch(SAMPLE, &PatchParams::default(), &scale).await?;
    if !wait(stop, || available(&apps, 5)).await? {
        return Ok(());
    }
    tracing::info!(target: "appservice::demo", "default/{SAMPLE} is Available: 5/5 Pods ready");

    let victim = pod_name(SAMPLE, 1);
    let old_uid = pods.get(&victim).await?.uid();
    tracing::info!(target: "appservice::demo", "deleting Pod default/{victim}");
    let deleted = pods.delete(&victim, &DeleteParams::default()).await?;
    if let Some(grace) = deleted
        .left()
        .and_then(|p| p.metadata.deletion_grace_period_seconds)
    {
        tracing::info!(target: "appservice::demo", "Pod default/{victim} is Terminating (grace {grace} s; the simulated kubelet stops it sooner)");
    }
    let back = || async {
        let pod = pods.get_opt(&victim).await?;
        Ok(pod.is_some_and(|p| p.uid() != old_uid && ready(&p)))
    };
    if wait(stop, back).await? {
        tracing::info!(target: "appservice::demo", "Pod default/{victim} is back (a new Pod, Running and Ready)");
        tracing::info!(target: "appservice::demo", "the demo is done; the operator keeps running (Ctrl-C to stop)");
    }
    Ok(())
}

/// Whether the AppService is `Available` for its current generation with `size` nodes.
async fn available(apps: &Api<AppService>, size: usize) -> Result<bool, kube::Error> {
    let app = apps.get(SAMPLE).await?;
    let Some(status) = &app.status else {
        return Ok(false);
    };
    let current = conditions::find_status_condition(&status.conditions, CONDITION_AVAILABLE)
        .is_some_and(|c| c.observed_generation == app.metadata.generation);
    Ok(current
        && status.nodes.len() == size
        && conditions::is_status_condition_true(&status.conditions, CONDITION_AVAILABLE))
}

fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Polls `check` until it holds (`true`) or `stop` is cancelled (`false`).
async fn wait<F, Fut>(stop: &CancellationToken, mut check: F) -> Result<bool, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, kube::Error>>,
{
    loop {
        if check().await? {
            return Ok(true);
        }
        tokio::select! {
            _ = stop.cancelled() => return Ok(false),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}
