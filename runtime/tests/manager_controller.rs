//! A manager running a controller on envtest: `source::Kind` on the manager's cache
//! feeds the controller, the reconciler reads through the manager's cached client,
//! and the reconcile shows up in `/metrics` under controller-runtime's names.

mod manager_common;

use std::time::Duration;

use ctrl_runtime::cache::Reader;
use ctrl_runtime::controller;
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use manager_common::{add_configmap_controller, env, get, launch, manager, with_metrics};
use tokio::sync::mpsc;

#[tokio::test]
async fn a_manager_runs_a_controller_that_reconciles_on_envtest() {
    let env = env().await;
    let mgr = manager(&env, with_metrics());
    let (tx, mut rx) = mpsc::unbounded_channel::<(Request, Option<String>)>();
    let client = mgr.client();
    let reconciler = reconcile::func(move |_ctx, req: Request| {
        let (tx, client) = (tx.clone(), client.clone());
        async move {
            // The cached read sees what the event was about.
            let cm = client
                .get::<ConfigMap>(&req.namespace, &req.name)
                .await
                .ok();
            let value = cm.and_then(|c| c.data.as_ref()?.get("k").cloned());
            let _ = tx.send((req, value));
            Ok(Action::done())
        }
    });
    add_configmap_controller(
        &mgr,
        "manager-configmaps",
        reconciler,
        controller::Options::default(),
    )
    .await;
    let running = launch(&mgr).await;

    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("reconcile-me".into());
    cm.data = Some([("k".to_string(), "v".to_string())].into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let (req, value) = loop {
        let got = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("reconciled in time")
            .expect("reconciler alive");
        if got.0.name == "reconcile-me" {
            break got;
        }
    };
    assert_eq!(req, Request::new("default", "reconcile-me"));
    assert_eq!(value.as_deref(), Some("v"));

    let metrics = get(mgr.metrics_addr().unwrap(), "/metrics").await.body;
    for needle in [
        "controller_runtime_reconcile_total{controller=\"manager-configmaps\",result=\"success\"}",
        "workqueue_adds_total{controller=\"manager-configmaps\",name=\"manager-configmaps\"}",
        "controller_runtime_active_workers{controller=\"manager-configmaps\"}",
    ] {
        assert!(metrics.contains(needle), "{needle} not in\n{metrics}");
    }
    running.stop().await.expect("clean stop");
}
