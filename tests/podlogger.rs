//! The PodLogger example as an integration test: its manager runs against
//! ctrl-envtest; the test changes Pods through its own kube client, as `kubectl`
//! would, and sees each event become one reconcile on the manager's metrics endpoint
//! (`controller_runtime_reconcile_total{controller="pod"}`), as a Prometheus scrape
//! would.

#[allow(dead_code)]
#[path = "../examples/podlogger/mod.rs"]
mod operator;
mod support;

use std::net::SocketAddr;

use ctrl_envtest::Environment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::{eventually, reconciles};

/// Waits until the `pod` controller has reconciled `n` times, then checks it did not
/// reconcile more.
async fn expect_reconciles(metrics: SocketAddr, n: u64, after: &str) {
    let seen = eventually(&format!("reconcile #{n} after {after}"), || async {
        let seen = reconciles(metrics, "pod").await;
        (seen >= n).then_some(seen)
    })
    .await;
    assert_eq!(seen, n, "reconciles after {after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pod_event_is_one_counted_reconcile() {
    let env = Environment::builder().start().await.expect("envtest");
    let mgr = operator::manager(env.client(), support::options()).expect("manager");
    let running = support::run(&mgr).await;
    let metrics = running.metrics;

    // No Pod, no reconcile: the counter starts at zero.
    assert_eq!(reconciles(metrics, "pod").await, 0);

    // kubectl run nginx --image=nginx
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &operator::pod("nginx", "nginx"))
        .await
        .expect("create pod");
    expect_reconciles(metrics, 1, "create").await;

    // kubectl label pod nginx tier=web
    let patch = json!({ "metadata": { "labels": { "tier": "web" } } });
    pods.patch("nginx", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("label pod");
    expect_reconciles(metrics, 2, "update").await;

    // kubectl delete pod nginx
    pods.delete("nginx", &DeleteParams::default())
        .await
        .expect("delete pod");
    expect_reconciles(metrics, 3, "delete").await;

    // Every reconcile succeeded (the function only logs).
    let text = support::scrape(metrics).await;
    let ok = support::sample_sum(
        &text,
        "controller_runtime_reconcile_total",
        &[("controller", "pod"), ("result", "success")],
    );
    assert_eq!(ok, 3.0, "{text}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_creates_and_deletes_nginx() {
    let env = Environment::builder().start().await.expect("envtest");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let watcher = {
        let pods = pods.clone();
        tokio::spawn(async move {
            eventually("the demo's Pod", || async {
                pods.get_opt(operator::DEMO_POD).await.ok().flatten()
            })
            .await
        })
    };
    operator::demo(env.client(), std::time::Duration::from_millis(500))
        .await
        .expect("demo");
    let seen = watcher.await.expect("watcher");
    let image = seen
        .spec
        .and_then(|s| s.containers.first().and_then(|c| c.image.clone()));
    assert_eq!(image.as_deref(), Some("nginx"));
    assert!(
        pods.get_opt(operator::DEMO_POD)
            .await
            .expect("get")
            .is_none()
    );
}
