//! An operator that owns a Deployment, tested to readiness on envtest: the Widget
//! controller (`For(Widget)`, `Owns(Deployment)`) makes a Deployment of `spec.size`
//! replicas and reports `status.ready` from the Deployment's own `Available` condition —
//! which ctrl-envtest's Deployment controller, ReplicaSet controller and simulated kubelet
//! produce. Nothing in the test writes a Deployment's status by hand.

use crate::common;

use std::time::Duration;

use common::{Widget, manager, start, widget};
use ctrl_builder::ControllerBuilder;
use ctrl_envtest::Environment;
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::api::apps::v1::Deployment;
use kube::CustomResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The Deployment a Widget of `size` wants.
fn deployment_for(w: &Widget) -> Deployment {
    let name = w.metadata.name.clone().unwrap_or_default();
    let mut d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": w.spec.size, "selector": {"matchLabels": {"widget": name}},
            "template": {"metadata": {"labels": {"widget": name}},
                "spec": {"containers": [{"name": "app", "image": "widget:1"}]}}}}))
    .expect("deployment");
    ctrl_runtime::controllerutil::set_controller_reference(w, &mut d).expect("owner");
    d
}

/// Whether the Deployment's `Available` condition is `True`.
fn available(d: &Deployment) -> bool {
    let conds = d.status.as_ref().and_then(|s| s.conditions.as_ref());
    conds.is_some_and(|cs| {
        cs.iter()
            .any(|c| c.type_ == "Available" && c.status == "True")
    })
}

/// Ensures the Widget's Deployment and mirrors its availability into `status.ready`.
async fn reconcile_widget(client: kube::Client, req: Request) -> Result<Action, reconcile::Error> {
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &req.namespace);
    let deployments: Api<Deployment> = Api::namespaced(client, &req.namespace);
    let Some(w) = widgets.get_opt(&req.name).await? else {
        return Ok(Action::done());
    };
    let d = match deployments.get_opt(&req.name).await? {
        Some(d) => d,
        None => {
            deployments
                .create(&PostParams::default(), &deployment_for(&w))
                .await?
        }
    };
    let ready =
        available(&d) && d.status.as_ref().and_then(|s| s.available_replicas) == Some(w.spec.size);
    if w.status.as_ref().map(|s| s.ready) != Some(ready) {
        let patch = json!({"status": {"ready": ready}});
        widgets
            .patch_status(&req.name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
    }
    Ok(Action::done())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sees_its_deployment_become_available_from_the_real_status() {
    let env = Environment::builder()
        .crd(Widget::crd())
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(100))
        .start()
        .await
        .expect("start envtest");
    let mgr = manager(&env);
    let client = env.client();
    let r = reconcile::func(move |_stop: CancellationToken, req: Request| {
        reconcile_widget(client.clone(), req)
    });
    ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .owns::<Deployment>()
        .named("widget-deployment")
        .complete(r)
        .expect("complete");
    let running = start(&mgr);
    let widgets: Api<Widget> = Api::namespaced(env.client(), "default");
    let mut w = widget("shop");
    w.spec.size = 2;
    widgets
        .create(&PostParams::default(), &w)
        .await
        .expect("create");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = widgets.get("shop").await.expect("get");
        if got.status.as_ref().is_some_and(|s| s.ready) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let d = deployments.get("shop").await.expect("deployment");
    assert!(available(&d), "{d:?}");
    let s = d.status.expect("status");
    assert_eq!(
        (s.ready_replicas, s.updated_replicas, s.observed_generation),
        (Some(2), Some(2), d.metadata.generation)
    );
    running.stop().await;
}
