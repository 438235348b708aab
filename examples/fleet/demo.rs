//! The local demo: a FleetConfigMap `default/example-settings` selecting the members
//! labelled `env in (dev, prod)`; the operator writes its ConfigMap into member-1 and
//! member-2 (not member-3, `env=staging`) and lists both in `status.clusters`; then
//! the data changes and the copies follow.

use std::path::Path;
use std::time::Duration;

use ctrl::CancellationToken;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::crd::{FleetConfigMap, FleetConfigMapSpec};
use super::members::Member;

/// The sample the demo creates.
pub const SAMPLE: &str = "example-settings";

/// Says how to watch the demo with kubectl.
pub fn watch_hints(hub: &Path, members: &[Member]) {
    tracing::info!(target: "fleet::envtest", "watch it:  kubectl --kubeconfig {} get fleetconfigmaps -o yaml -w", hub.display());
    for m in members {
        tracing::info!(target: "fleet::envtest", "{}: kubectl --kubeconfig {} get configmaps -o yaml", m.name, m.kubeconfig.display());
    }
}

/// The story on `hub`, until done or `stop`.
pub async fn run(
    hub: kube::Client,
    members: Vec<kube::Client>,
    stop: &CancellationToken,
) -> Result<(), kube::Error> {
    let fcms: Api<FleetConfigMap> = Api::namespaced(hub, "default");
    let selector = LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "env".into(),
            operator: "In".into(),
            values: Some(vec!["dev".into(), "prod".into()]),
        }]),
        ..Default::default()
    };
    let spec = FleetConfigMapSpec {
        data: [("greeting".to_string(), "hello".to_string())].into(),
        cluster_selector: Some(selector),
    };
    tracing::info!(target: "fleet::demo", "creating FleetConfigMap default/{SAMPLE} for env in (dev, prod)");
    fcms.create(&PostParams::default(), &FleetConfigMap::new(SAMPLE, spec))
        .await?;
    if !wait_for(&members, "hello", stop).await {
        return Ok(());
    }
    tracing::info!(target: "fleet::demo", "member-1 and member-2 have the ConfigMap; changing its data");
    let patch = json!({ "spec": { "data": { "greeting": "hello, fleet" } } });
    fcms.patch(SAMPLE, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    if wait_for(&members, "hello, fleet", stop).await {
        let status = fcms.get(SAMPLE).await?.status.unwrap_or_default();
        for c in status.clusters {
            tracing::info!(target: "fleet::demo", cluster = %c.name, current = c.current, "status");
        }
    }
    Ok(())
}

/// Waits until member-1 and member-2 hold `greeting: <want>` (false if stopped first).
async fn wait_for(members: &[kube::Client], want: &str, stop: &CancellationToken) -> bool {
    loop {
        let mut all = true;
        for m in members.iter().take(2) {
            let api: Api<ConfigMap> = Api::namespaced(m.clone(), "default");
            let got = api.get_opt(SAMPLE).await.ok().flatten();
            let data = got
                .and_then(|c| c.data)
                .and_then(|d| d.get("greeting").cloned());
            all &= data.as_deref() == Some(want);
        }
        if all {
            return true;
        }
        tokio::select! {
            _ = stop.cancelled() => return false,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}
