//! The virtualmachine example as an integration test: its hand-built controller
//! (informer, lister, rate-limiting queue, workers) runs against ctrl-envtest and a
//! fake hypervisor; the test writes VirtualMachines through its own kube client in
//! the wire format, reads their status the same way, and looks at the hypervisor,
//! the system outside the cluster the controller drives.

use crate::common::kubectl as common_kubectl;
use crate::examples_virtualmachine as operator;
use crate::support;

use ctrl_envtest::wait::wait_until;
use ctrl_envtest::{Environment, FaultMatch, FaultStatus, Verb};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use operator::hypervisor::Hypervisor;
use serde_json::{Value, json};
use support::eventually;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const KEY: &str = "default/vm-a";

/// A mebibyte.
const MI: f64 = 1024.0 * 1024.0;

fn vms(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cloudnative.tw", "v1alpha1", "VirtualMachine");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "virtualmachines");
    Api::namespaced_with(client, "default", &ar)
}

/// Waits until `vm-a`'s status satisfies `ok`; returns the status.
async fn wait_status(api: &Api<DynamicObject>, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    eventually(what, || async {
        let vm = api.get_opt("vm-a").await.ok().flatten()?;
        let status = vm.data.get("status")?.clone();
        ok(&status).then_some(status)
    })
    .await
}

/// The controller running on a fresh ctrl-envtest with a fresh hypervisor.
struct Running {
    env: Environment,
    api: Api<DynamicObject>,
    hypervisor: Hypervisor,
    stop: CancellationToken,
    task: JoinHandle<Result<(), operator::controller::Error>>,
}

async fn start(threadiness: usize) -> Running {
    let env = Environment::builder()
        .crd(operator::crd::crd())
        .start()
        .await
        .expect("envtest");
    let hypervisor = Hypervisor::new();
    let stop = CancellationToken::new();
    let task = tokio::spawn(operator::controller::run(
        env.client(),
        hypervisor.clone(),
        threadiness,
        stop.clone(),
    ));
    Running {
        api: vms(env.client()),
        env,
        hypervisor,
        stop,
        task,
    }
}

impl Running {
    /// Creates VirtualMachine `vm-a` with `spec` (JSON).
    async fn create(&self, spec: Value) {
        let vm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cloudnative.tw/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": { "name": "vm-a" },
            "spec": spec,
        }))
        .expect("vm json");
        self.api
            .create(&PostParams::default(), &vm)
            .await
            .expect("create vm");
    }

    /// Ctrl-C: the queue shuts down, the workers drain, `run` returns cleanly.
    async fn stop(self) {
        self.stop.cancel();
        self.task
            .await
            .expect("controller task")
            .expect("controller stopped cleanly");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_becomes_active_follows_a_resize_and_its_server_goes_with_it() {
    let vm = start(2).await;
    let (api, hypervisor) = (&vm.api, &vm.hypervisor);
    vm.create(json!({ "resource": { "cpu": 2, "memory": "2Gi", "rootDisk": "40G" } }))
        .await;

    // Active, with the server's state and usage, and the finalizer on.
    let status = wait_status(api, "phase Active", |s| s["phase"] == "Active").await;
    assert_eq!(status["server"]["state"], "Running");
    assert_eq!(status["server"]["usage"]["cpu"], 40.0);
    assert!(status["lastUpdateTime"].is_string(), "{status}");
    let got = api.get("vm-a").await.expect("get vm");
    assert_eq!(
        got.metadata.finalizers,
        Some(vec![operator::crd::FINALIZER.to_string()])
    );
    let server = hypervisor.get(KEY).expect("a server for vm-a");
    assert_eq!(
        (server.resource.cpus(), server.resource.memory_bytes()),
        (2.0, 2048.0 * MI)
    );

    // A resize reaches the hypervisor and the status.
    let resize = json!({ "spec": { "resource": { "cpu": "4", "memory": "4096Mi" } } });
    api.patch("vm-a", &PatchParams::default(), &Patch::Merge(&resize))
        .await
        .expect("resize vm");
    wait_status(api, "usage after the resize", |s| {
        s["server"]["usage"]["cpu"] == 20.0
    })
    .await;
    let server = hypervisor.get(KEY).expect("still a server for vm-a");
    assert_eq!(
        (server.resource.cpus(), server.resource.memory_bytes()),
        (4.0, 4096.0 * MI)
    );

    // Deleting the object deletes the server first (the finalizer), then the object goes.
    api.delete("vm-a", &DeleteParams::default())
        .await
        .expect("delete vm");
    eventually("vm-a deleted", || async {
        api.get_opt("vm-a").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(hypervisor.get(KEY), None);
    assert!(hypervisor.keys().is_empty(), "{:?}", hypervisor.keys());

    vm.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_vm_uses_nothing() {
    let vm = start(1).await;
    vm.create(
        json!({ "resource": { "cpu": 1, "memory": "512Mi", "rootDisk": "10G" }, "action": "stop" }),
    )
    .await;
    let status = wait_status(&vm.api, "phase Active", |s| s["phase"] == "Active").await;
    assert_eq!(status["server"]["state"], "Stopped");
    assert_eq!(status["server"]["usage"]["cpu"], 0.0);
    assert_eq!(vm.hypervisor.get(KEY).map(|s| s.running), Some(false));
    vm.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_is_retried_with_backoff() {
    let vm = start(1).await;
    // The first two status writes fail with a 500: each failed sync goes back to the
    // queue with add_rate_limited (5 ms, then 10 ms) and the third one succeeds.
    let status_patches = FaultMatch::any()
        .verb(Verb::Patch)
        .resource("virtualmachines")
        .subresource("status");
    let faults = vm.env.faults();
    faults.fail_next(2, status_patches, FaultStatus::internal_error());
    vm.create(json!({ "resource": { "cpu": 2, "memory": "1Gi", "rootDisk": "20G" } }))
        .await;
    let status = wait_status(&vm.api, "phase Active", |s| s["phase"] == "Active").await;
    assert_eq!(status["server"]["state"], "Running");
    let patches = |injected: bool| {
        faults.count_requests(|r| {
            r.verb == Some(Verb::Patch)
                && r.path.ends_with("/vm-a/status")
                && r.injected == injected
        })
    };
    assert_eq!(patches(true), 2, "{:?}", faults.requests());
    // The successful patch is in the request log once its response is written, which
    // may be just after the status it wrote can be read.
    let logged = || async { patches(false) };
    wait_until(
        "the successful status patch in the request log",
        logged,
        |n| *n >= 1,
    )
    .await;
    vm.stop().await;
}

/// The article's own manifest: `cpu: 2` (an integer), `memory: 4G` and `rootDisk: "40G"`
/// (strings) — Kubernetes quantities, applied with kubectl as the article does.
const ARTICLE_VM: &str = r#"apiVersion: cloudnative.tw/v1alpha1
kind: VirtualMachine
metadata:
  name: vm-a
spec:
  resource:
    cpu: 2
    memory: 4G
    rootDisk: "40G"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_articles_manifest_is_accepted_and_runs() {
    if !common_kubectl::found() {
        return;
    }
    let vm = start(1).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = dir.path().join("vm.yaml");
    std::fs::write(&manifest, ARTICLE_VM).expect("write manifest");
    let kubectl = common_kubectl::Kubectl::new(&vm.env);
    let file = common_kubectl::path_str(&manifest);
    kubectl.ok(&["apply", "-n", "default", "-f", file]).await;

    let status = wait_status(&vm.api, "phase Active", |s| s["phase"] == "Active").await;
    assert_eq!(status["server"]["usage"]["cpu"], 40.0);
    // Stored as written, but for `cpu`: the controller's update (the finalizer) writes
    // the quantity back in its string form, as Go's `resource.Quantity` marshals it.
    let stored = vm.api.get("vm-a").await.expect("get vm");
    let resource = &stored.data["spec"]["resource"];
    assert!(
        resource["cpu"] == json!(2) || resource["cpu"] == "2",
        "{resource}"
    );
    assert_eq!(
        (&resource["memory"], &resource["rootDisk"]),
        (&json!("4G"), &json!("40G"))
    );
    let server = vm.hypervisor.get(KEY).expect("a server for vm-a");
    assert_eq!(
        (server.resource.cpus(), server.resource.memory_bytes()),
        (2.0, 4e9)
    );
    vm.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_is_not_a_quantity_is_refused() {
    let vm = start(1).await;
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cloudnative.tw/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": { "name": "vm-a" },
        "spec": { "resource": { "cpu": 2, "memory": "four gigs" } },
    }))
    .expect("vm json");
    let err = vm
        .api
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("memory is not a quantity");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.contains("spec.resource.memory"),
        "{status:?}"
    );
    assert!(vm.api.get_opt("vm-a").await.expect("get").is_none());
    vm.stop().await;
}
