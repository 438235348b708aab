//! The AppService example as an integration test. The operator's modules run against
//! ctrl-envtest with its simulated kubelet; everything the test checks it reads
//! through its own kube client in the wire format (`spec`, `status.nodes`,
//! `status.conditions`, Pods, Events), as `kubectl` would.

use crate::examples_appservice as operator;

use std::time::Duration;

use ctrl::manager::{Error as ManagerError, Options};
use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a test waits for something the operator does.
const WAIT: Duration = Duration::from_secs(20);

async fn env() -> Environment {
    Environment::builder()
        .crd(operator::crd::crd())
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(100))
        .pod_stop_delay(Duration::from_millis(100))
        .start()
        .await
        .expect("start envtest")
}

/// The operator's manager on `env`, running until `stop`; its controller is `name`
/// (controller names are unique per process).
async fn operator(
    env: &Environment,
    name: &str,
    stop: &CancellationToken,
) -> JoinHandle<Result<(), ManagerError>> {
    let opts = Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        ..Default::default()
    };
    let cfg = operator::controller::Config {
        name: name.into(),
        ..Default::default()
    };
    let mgr = operator::setup::manager(env.client(), opts, &cfg).expect("manager");
    let stop = stop.clone();
    tokio::spawn(async move { mgr.start(stop).await })
}

/// AppServices as untyped objects: the test sees what is stored, not the example's types.
fn apps(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("app.example.com", "v1alpha1", "AppService");
    Api::namespaced_with(client, "default", &ApiResource::from_gvk(&gvk))
}

async fn create_app(api: &Api<DynamicObject>, name: &str, spec: Value) -> DynamicObject {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "app.example.com/v1alpha1", "kind": "AppService",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create AppService")
}

/// Polls until `ok` holds on what `get` returns; returns that.
async fn eventually<T: std::fmt::Debug, F, Fut>(
    what: &str,
    mut get: F,
    ok: impl Fn(&T) -> bool,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let get = || {
        let next = get();
        async move { next.await.unwrap_or_else(|e| panic!("{what}: {e}")) }
    };
    Wait::new().timeout(WAIT).until(what, get, ok).await
}

/// Whether the app is `Available` for its current generation with exactly `nodes`.
fn available_with(app: &Option<DynamicObject>, nodes: &[&str]) -> bool {
    let Some(app) = app else { return false };
    let status = &app.data["status"];
    let cond = status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available").cloned())
        .unwrap_or_default();
    cond["status"] == "True"
        && cond["observedGeneration"].as_i64() == app.metadata.generation
        && status["nodes"] == json!(nodes)
}

/// The Pods of `default`, by name, sorted.
async fn pod_names(pods: &Api<Pod>) -> Result<Vec<String>, kube::Error> {
    let list = pods.list(&ListParams::default()).await?;
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scales_reports_status_recreates_pods_and_finalizes() {
    let stop = CancellationToken::new();
    let env = env().await;
    let running = operator(&env, "appservice-story", &stop).await;
    let client = env.client();
    let api = apps(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let app = create_app(&api, "web", json!({"size": 3})).await;
    let uid = app.metadata.uid.clone().expect("uid");

    let three = ["web-pod-0", "web-pod-1", "web-pod-2"];
    eventually(
        "3 Pods Available",
        || api.get_opt("web"),
        |a| available_with(a, &three),
    )
    .await;
    for name in three {
        let pod = pods.get(name).await.expect("pod");
        let owner = pod.metadata.owner_references.clone().unwrap_or_default();
        assert!(
            owner
                .iter()
                .any(|r| r.uid == uid && r.controller == Some(true) && r.kind == "AppService"),
            "{owner:?}"
        );
        let image = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers[0].image.clone());
        assert_eq!(image.as_deref(), Some("busybox"), "the CRD's default image");
        assert!(ready(&pod), "{name} runs on the simulated kubelet");
    }
    let got = api.get("web").await.expect("get");
    assert_eq!(
        got.metadata.finalizers,
        Some(vec!["app.example.com/finalizer".to_string()])
    );

    // Scale up, then down.
    let scale = |n: i32| Patch::Merge(json!({"spec": {"size": n}}));
    api.patch("web", &PatchParams::default(), &scale(5))
        .await
        .expect("scale up");
    let five = [
        "web-pod-0",
        "web-pod-1",
        "web-pod-2",
        "web-pod-3",
        "web-pod-4",
    ];
    eventually(
        "5 Pods Available",
        || api.get_opt("web"),
        |a| available_with(a, &five),
    )
    .await;
    api.patch("web", &PatchParams::default(), &scale(2))
        .await
        .expect("scale down");
    let two = ["web-pod-0", "web-pod-1"];
    eventually(
        "2 Pods Available",
        || api.get_opt("web"),
        |a| available_with(a, &two),
    )
    .await;
    eventually("extra Pods gone", || pod_names(&pods), |n| *n == two).await;

    // A deleted Pod comes back: a new Pod with the same name.
    let old = pods.get("web-pod-0").await.expect("pod").metadata.uid;
    pods.delete("web-pod-0", &DeleteParams::default())
        .await
        .expect("delete pod");
    let again = |p: &Option<Pod>| {
        p.as_ref()
            .is_some_and(|p| p.metadata.uid != old && ready(p))
    };
    eventually("web-pod-0 recreated", || pods.get_opt("web-pod-0"), again).await;
    eventually(
        "Available again",
        || api.get_opt("web"),
        |a| available_with(a, &two),
    )
    .await;

    // Deleting the AppService runs the finalizer (a Deleting Event), then GC takes the Pods.
    api.delete("web", &DeleteParams::default())
        .await
        .expect("delete app");
    eventually("AppService gone", || api.get_opt("web"), Option::is_none).await;
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let deleting = |es: &Vec<Event>| {
        es.iter().any(|e| {
            e.reason.as_deref() == Some("Deleting")
                && e.type_.as_deref() == Some("Normal")
                && e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str())
        })
    };
    let list_events = || async { Ok(events.list(&ListParams::default()).await?.items) };
    eventually("a Deleting Event", list_events, deleting).await;
    eventually("Pods collected", || pod_names(&pods), Vec::is_empty).await;

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}

#[tokio::test]
async fn the_crd_schema_defaults_and_validates_the_spec() {
    // --print-crd prints a CRD that parses back.
    let yaml = ctrl::cli::print::crds_yaml(&[operator::crd::crd()]).expect("crd yaml");
    let parsed: CustomResourceDefinition = serde_saphyr::from_str(&yaml).expect("parse crd yaml");
    assert_eq!(
        parsed.metadata.name.as_deref(),
        Some("appservices.app.example.com")
    );

    let env = env().await;
    let api = apps(env.client());
    let created = create_app(&api, "defaults", json!({})).await;
    assert_eq!(created.data["spec"], json!({"size": 1, "image": "busybox"}));
    let created = create_app(&api, "some", json!({"size": 4})).await;
    assert_eq!(created.data["spec"], json!({"size": 4, "image": "busybox"}));

    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "app.example.com/v1alpha1", "kind": "AppService",
        "metadata": {"name": "negative"}, "spec": {"size": -1},
    }))
    .expect("object");
    match api.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{s:?}"),
        other => panic!("size -1 must be rejected: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_its_story_on_the_simulated_kubelet() {
    let stop = CancellationToken::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let builder = Environment::builder().crd(operator::crd::crd());
    let env = ctrl::cli::envtest::start(builder, &kubeconfig, "AppService CRD")
        .await
        .expect("demo envtest");
    let running = operator(&env, "appservice-demo", &stop).await;
    operator::demo::run(env.client(), &stop)
        .await
        .expect("demo story");

    // Observed through the kubeconfig the demo wrote, as kubectl would.
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("read kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(cfg).expect("client");
    let names: Vec<String> = (0..5)
        .map(|i| operator::controller::pod_name(operator::demo::SAMPLE, i))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let app = apps(client.clone())
        .get_opt(operator::demo::SAMPLE)
        .await
        .expect("get");
    assert!(available_with(&app, &names), "{app:#?}");
    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}
