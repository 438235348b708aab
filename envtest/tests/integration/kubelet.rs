//! The simulated kubelet (`EnvironmentBuilder::simulate_pods`): Pods are bound to the
//! simulated Node, then run with `Ready`; deleting a bound Pod is graceful
//! (`deletionTimestamp` + `deletionGracePeriodSeconds`, gone after the grace), grace 0 is
//! immediate; and with the simulation off nothing touches a Pod.

use crate::common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

use ctrl_envtest::wait::Wait;
use ctrl_envtest::{Environment, SIMULATED_NODE};

/// How long a test waits for something the kubelet does.
const WAIT: Duration = Duration::from_secs(15);

fn pod(name: &str, extra_spec: Value) -> Pod {
    let mut spec = json!({"containers": [
        {"name": "app", "image": "busybox"},
        {"name": "sidecar", "image": "nginx:1.27"},
    ]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra_spec.as_object()) {
        s.extend(e.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

async fn simulated(stop_delay: Duration) -> Environment {
    Environment::builder()
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(200))
        .pod_stop_delay(stop_delay)
        .start()
        .await
        .expect("start envtest")
}

/// Polls `api` for `name` until `f` holds on what `get_opt` returns.
async fn wait_for(
    api: &Api<Pod>,
    name: &str,
    what: &str,
    f: impl Fn(Option<&Pod>) -> bool,
) -> Option<Pod> {
    let get = || async { api.get_opt(name).await.expect("get pod") };
    Wait::new()
        .timeout(WAIT)
        .until(&format!("{name} {what}"), get, |got| f(got.as_ref()))
        .await
}

fn running(p: Option<&Pod>) -> bool {
    p.and_then(|p| p.status.as_ref())
        .and_then(|s| s.phase.as_deref())
        == Some("Running")
}

fn true_conditions(p: &Pod) -> Vec<String> {
    let mut out: Vec<String> = (p.status.iter())
        .flat_map(|s| s.conditions.iter().flatten())
        .filter(|c| c.status == "True")
        .map(|c| c.type_.clone())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_pod_is_bound_then_runs_ready() {
    let env = simulated(Duration::from_secs(1)).await;
    let nodes: Api<Node> = Api::all(env.client());
    let node = nodes.get(SIMULATED_NODE).await.expect("the simulated node");
    let ready = node.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(
        ready
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
        "{ready:?}"
    );

    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version;
    let mut events = api
        .watch(&WatchParams::default(), &rv.unwrap_or_default())
        .await
        .expect("watch")
        .boxed();
    let mut p = pod(
        "web",
        json!({"initContainers": [{"name": "init", "image": "busybox"}]}),
    );
    p.metadata.namespace = Some("default".into());
    api.create(&PostParams::default(), &p)
        .await
        .expect("create");

    // Every state the Pod passes through, in order, until it runs.
    let mut seen: Vec<Pod> = Vec::new();
    while !running(seen.last()) {
        let ev = tokio::time::timeout(WAIT, events.try_next())
            .await
            .expect("a watch event in time")
            .expect("watch ok")
            .expect("watch open");
        match ev {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => seen.push(p),
            other => panic!("unexpected event {other:?}"),
        }
    }
    let node_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
    assert_eq!(node_of(&seen[0]), None, "created unscheduled");
    // The binding is one write, as `pods/binding`: nodeName and PodScheduled together.
    let bound = &seen[1];
    assert_eq!(node_of(bound).as_deref(), Some(SIMULATED_NODE));
    assert_eq!(true_conditions(bound), ["PodScheduled"]);
    let phase = bound.status.as_ref().and_then(|s| s.phase.as_deref());
    assert_eq!(phase, Some("Pending"));

    let run = seen.last().expect("running");
    assert_eq!(node_of(run).as_deref(), Some(SIMULATED_NODE));
    assert_eq!(
        true_conditions(run),
        [
            "ContainersReady",
            "Initialized",
            "PodReadyToStartContainers",
            "PodScheduled",
            "Ready"
        ]
    );
    let s = run.status.as_ref().expect("status");
    assert!(
        s.pod_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.244.")),
        "{s:?}"
    );
    assert!(s.host_ip.is_some() && s.start_time.is_some(), "{s:?}");
    let containers = s.container_statuses.clone().unwrap_or_default();
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["app", "sidecar"]);
    assert!(
        containers
            .iter()
            .all(|c| c.ready && c.state.as_ref().is_some_and(|st| st.running.is_some()))
    );
    assert_eq!(containers[1].image, "nginx:1.27");
    let inits = s.init_container_statuses.clone().unwrap_or_default();
    assert!(
        inits[0]
            .state
            .as_ref()
            .and_then(|st| st.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0)
    );
}

#[tokio::test]
async fn a_deleted_pod_waits_for_its_grace_period() {
    // The stop delay is long: the grace period (1 s) decides.
    let env = simulated(Duration::from_secs(3600)).await;
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &pod("slow", json!({})))
        .await
        .expect("create");
    wait_for(&api, "slow", "running", running).await;

    let dp = DeleteParams {
        grace_period_seconds: Some(1),
        ..Default::default()
    };
    let marked = api
        .delete("slow", &dp)
        .await
        .expect("delete")
        .left()
        .expect("a running pod must not go at once");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(1));
    // A write during the grace period does not end it.
    let label = json!({"metadata": {"labels": {"touched": "yes"}}});
    let touched = api
        .patch("slow", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .expect("patch");
    assert!(touched.metadata.deletion_timestamp.is_some());

    wait_for(&api, "slow", "gone", |p| p.is_none()).await;
}

#[tokio::test]
async fn grace_comes_from_the_spec_can_shorten_and_zero_is_immediate() {
    let env = simulated(Duration::from_secs(3600)).await;
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    api.create(
        &PostParams::default(),
        &pod("p", json!({"terminationGracePeriodSeconds": 120})),
    )
    .await
    .expect("create");
    wait_for(&api, "p", "running", running).await;

    let marked = api
        .delete("p", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("must be graceful");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(120));
    let shorter = DeleteParams {
        grace_period_seconds: Some(60),
        ..Default::default()
    };
    let marked = api
        .delete("p", &shorter)
        .await
        .expect("delete")
        .left()
        .expect("still graceful");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(60));
    let longer = DeleteParams {
        grace_period_seconds: Some(300),
        ..Default::default()
    };
    let marked = api
        .delete("p", &longer)
        .await
        .expect("delete")
        .left()
        .expect("still graceful");
    assert_eq!(
        marked.metadata.deletion_grace_period_seconds,
        Some(60),
        "never lengthened"
    );

    // Grace 0 (`kubectl delete --grace-period=0 --force`) removes it at once.
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    // A removed Pod is answered with the Pod (upstream's ReturnDeletedObject): it is gone.
    assert!(api.delete("p", &now).await.expect("delete").is_left());
    assert!(
        api.get_opt("p").await.unwrap().is_none(),
        "p removed at once"
    );
    assert!(api.get_opt("p").await.expect("get").is_none());

    // So does grace 0 on a pod that was never deleted before.
    api.create(&PostParams::default(), &pod("q", json!({})))
        .await
        .expect("create");
    wait_for(&api, "q", "running", running).await;
    // A removed Pod is answered with the Pod (upstream's ReturnDeletedObject): it is gone.
    assert!(api.delete("q", &now).await.expect("delete").is_left());
    assert!(
        api.get_opt("q").await.unwrap().is_none(),
        "q removed at once"
    );
    assert!(api.get_opt("q").await.expect("get").is_none());
}

#[tokio::test]
async fn finalizers_hold_a_pod_after_its_containers_stop() {
    let env = simulated(Duration::from_millis(100)).await;
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    let mut p = pod("held", json!({}));
    p.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &p)
        .await
        .expect("create");
    wait_for(&api, "held", "running", running).await;
    api.delete("held", &DeleteParams::default())
        .await
        .expect("delete");
    // The kubelet deleted it with grace 0 once the containers stopped; the finalizer holds it.
    wait_for(&api, "held", "stopped", |p| {
        p.is_some_and(|p| p.metadata.deletion_grace_period_seconds == Some(0))
    })
    .await;
    let release = json!({"metadata": {"finalizers": null}});
    api.patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .expect("patch");
    wait_for(&api, "held", "gone", |p| p.is_none()).await;
}

#[tokio::test]
async fn a_deleted_namespace_terminates_its_pods_then_goes() {
    let env = simulated(Duration::from_millis(100)).await;
    let nss: Api<Namespace> = Api::all(env.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns");
    nss.create(&PostParams::default(), &ns)
        .await
        .expect("create ns");
    let api: Api<Pod> = Api::namespaced(env.client(), "team");
    api.create(&PostParams::default(), &pod("w", json!({})))
        .await
        .expect("create");
    wait_for(&api, "w", "running", running).await;
    nss.delete("team", &DeleteParams::default())
        .await
        .expect("delete ns");
    wait_for(&api, "w", "gone", |p| p.is_none()).await;
    let get = || async { nss.get_opt("team").await.expect("get ns") };
    let wait = Wait::new().timeout(WAIT);
    wait.until("namespace team gone", get, Option::is_none)
        .await;
}

#[tokio::test]
async fn without_simulation_nothing_touches_a_pod() {
    let env = common::env().await;
    let nodes: Api<Node> = Api::all(env.client());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .expect("list nodes")
            .items
            .is_empty()
    );
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &pod("still", json!({})))
        .await
        .expect("create");
    // Longer than the simulated kubelet's default start delay (500 ms).
    tokio::time::sleep(Duration::from_millis(800)).await;
    let now = api.get("still").await.expect("get");
    assert_eq!(
        now.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(now.spec.and_then(|s| s.node_name), None);
    // And a delete is immediate, whatever the grace period.
    let dp = DeleteParams {
        grace_period_seconds: Some(30),
        ..Default::default()
    };
    // A removed Pod is answered with the Pod (upstream's ReturnDeletedObject): it is gone.
    assert!(api.delete("still", &dp).await.expect("delete").is_left());
    assert!(
        api.get_opt("still").await.unwrap().is_none(),
        "still removed at once"
    );
}

#[tokio::test]
async fn a_bad_grace_period_is_a_400_and_changes_nothing() {
    let env = simulated(Duration::from_secs(1)).await;
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &pod("x", json!({})))
        .await
        .expect("create");
    wait_for(&api, "x", "running", running).await;
    let (code, body) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/pods/x",
        Some(r#"{"gracePeriodSeconds":"soon"}"#),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, _) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/pods/x?gracePeriodSeconds=x",
        None,
        "",
    )
    .await;
    assert_eq!(code, 400);
    let still = api.get("x").await.expect("get");
    assert!(still.metadata.deletion_timestamp.is_none());

    // A negative grace period counts as 1 s, as upstream's pod strategy has it.
    let (code, body) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/pods/x",
        Some(r#"{"gracePeriodSeconds":-5}"#),
        "application/json",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 1, "{body}");
}
