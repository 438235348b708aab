//! The createonly example as an integration test: its controller runs against
//! ctrl-envtest; the test creates, updates and deletes AppServices through its own
//! kube client and sees that only creates reach the work queue and the reconciler,
//! on the manager's metrics endpoint (`workqueue_adds_total`,
//! `controller_runtime_reconcile_total`) and in the `Reconciled` Events the
//! reconciler records.

#[allow(dead_code)]
#[path = "../examples/createonly/mod.rs"]
mod operator;
mod support;

use std::net::SocketAddr;

use ctrl::manager::Manager;
use ctrl_envtest::Environment;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use operator::controller::{NAME, REASON};
use operator::crd::{self, AppService, AppServiceSpec};
use serde_json::json;
use support::{eventually, reconciles, sample_sum, scrape};

/// `workqueue_adds_total` of the controller's queue: how many requests the event
/// handler enqueued (a request already waiting in the queue is not counted again).
async fn adds(metrics: SocketAddr) -> u64 {
    sample_sum(
        &scrape(metrics).await,
        "workqueue_adds_total",
        &[("name", NAME)],
    ) as u64
}

/// Waits for the reconciler's `Reconciled` Event regarding AppService `name`: its
/// reconcile has run.
async fn wait_reconciled(client: &kube::Client, name: &str) {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    eventually(&format!("a {REASON} Event regarding {name}"), || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some(REASON)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            })
            .then_some(())
    })
    .await
}

/// Creates AppService `name` and waits until it has been reconciled; returns the
/// number of adds to the queue so far (all of them happened before this create's).
async fn create_and_wait(
    api: &Api<AppService>,
    client: &kube::Client,
    metrics: SocketAddr,
    name: &str,
) -> u64 {
    let app = AppService::new(name, AppServiceSpec::default());
    api.create(&PostParams::default(), &app)
        .await
        .expect("create appservice");
    wait_reconciled(client, name).await;
    adds(metrics).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_creates_are_reconciled() {
    let env = Environment::builder()
        .crd(crd::crd())
        .start()
        .await
        .expect("envtest");
    let mgr = Manager::new(env.client(), support::options()).expect("manager");
    operator::controller::setup(&mgr).expect("controller");
    let running = support::run(&mgr).await;
    let metrics = running.metrics;
    let client = env.client();
    let api: Api<AppService> = Api::namespaced(client.clone(), "default");

    // A create is enqueued and reconciled.
    assert_eq!(create_and_wait(&api, &client, metrics, "first").await, 1);

    // An update is not: when the next create has been reconciled, the queue has seen
    // that create and nothing else (the update came first on the same watch).
    let patch = json!({ "spec": { "size": 5 } });
    api.patch("first", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("update appservice");
    assert_eq!(create_and_wait(&api, &client, metrics, "second").await, 2);

    // Nor is a delete.
    api.delete("first", &DeleteParams::default())
        .await
        .expect("delete appservice");
    assert_eq!(create_and_wait(&api, &client, metrics, "third").await, 3);

    // Three adds, three reconciles.
    let total = eventually("three reconciles", || async {
        let n = reconciles(metrics, NAME).await;
        (n >= 3).then_some(n)
    })
    .await;
    assert_eq!(total, 3);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crd_has_the_walkthroughs_defaults() {
    let env = Environment::builder()
        .crd(crd::crd())
        .start()
        .await
        .expect("envtest");
    // The API server fills in the schema's defaults: size 1, image busybox.
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("app.example.com", "v1alpha1", "AppService"),
            "appservices",
        ),
    );
    let bare: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "app.example.com/v1alpha1",
        "kind": "AppService",
        "metadata": { "name": "bare" },
        "spec": {},
    }))
    .expect("json");
    let created = api
        .create(&PostParams::default(), &bare)
        .await
        .expect("create");
    assert_eq!(created.data["spec"]["size"], 1);
    assert_eq!(created.data["spec"]["image"], "busybox");
    // ... and refuses a negative size.
    let negative: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "app.example.com/v1alpha1",
        "kind": "AppService",
        "metadata": { "name": "negative" },
        "spec": { "size": -1 },
    }))
    .expect("json");
    let err = api.create(&PostParams::default(), &negative).await;
    assert!(
        matches!(&err, Err(kube::Error::Api(s)) if s.code == 422),
        "{err:?}"
    );
}
