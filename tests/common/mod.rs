//! Helpers the StorageBucket example's tests share: the example's modules are
//! mounted by each test file itself (`#[path]`), these only read and write buckets
//! through a plain kube client, as `kubectl` would, in the wire format.
#![allow(dead_code)]

pub mod kubectl;

use std::time::Duration;

use ctrl_envtest::wait::Wait;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

/// How long a test waits for something the operator does.
pub const WAIT: Duration = Duration::from_secs(15);

/// A fresh ctrl-envtest with the example's CRD installed (each test file mounts the
/// example's modules as `crate::operator`).
pub async fn env() -> ctrl_envtest::Environment {
    ctrl_envtest::Environment::builder()
        .crd(crate::operator::crd::crd())
        .start()
        .await
        .expect("envtest")
}

/// StorageBuckets in namespace `default`, untyped.
pub fn buckets_api(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("storage.example.com", "v1", "StorageBucket");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "storagebuckets");
    Api::namespaced_with(client, "default", &ar)
}

/// A StorageBucket named `name` with `spec`, as JSON.
pub fn bucket(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "storage.example.com/v1",
        "kind": "StorageBucket",
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("bucket json")
}

/// Creates bucket `name` at `endpoint` (no probe path) and returns it as stored.
pub async fn create_bucket(api: &Api<DynamicObject>, name: &str, endpoint: &str) -> DynamicObject {
    api.create(
        &PostParams::default(),
        &bucket(name, json!({ "endpoint": endpoint })),
    )
    .await
    .expect("create bucket")
}

/// Polls `name` until `ok` holds for it (`None`: it is gone), or panics after [`WAIT`].
pub async fn wait_until(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    ok: impl Fn(Option<&DynamicObject>) -> bool,
) -> Option<DynamicObject> {
    let get = || async { api.get_opt(name).await.expect("get bucket") };
    Wait::new()
        .timeout(WAIT)
        .until(&format!("{name}: {what}"), get, |got| ok(got.as_ref()))
        .await
}

/// The bucket's `status` (`null` when absent).
pub fn status(obj: Option<&DynamicObject>) -> &Value {
    obj.and_then(|o| o.data.get("status"))
        .unwrap_or(&Value::Null)
}

/// `status.available`.
pub fn available(obj: Option<&DynamicObject>) -> Option<bool> {
    status(obj)["available"].as_bool()
}

/// The webhook server the tests run: `127.0.0.1`, a free port (bound now), and a
/// fresh self-signed certificate in a temp dir; also the CA's PEM, for the webhook
/// configurations' `caBundle` (what `ctrl::cli` does in a local run).
pub fn webhook_server() -> (ctrl::webhook::Server, String) {
    let local = ctrl::cli::envtest::LocalWebhooks::new(Default::default()).expect("webhook server");
    (local.server, local.ca_pem)
}

/// What the StorageBucket webhooks are, as the manager's webhook server describes them
/// once `webhooks::setup` registered them (a manager only built, never started).
pub fn registrations() -> Vec<ctrl::webhook::Registration> {
    let opts = ctrl::manager::Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let client = ctrl::cli::print::offline_client().expect("offline client");
    let mgr = ctrl::manager::Manager::new(client, opts).expect("manager");
    crate::operator::webhooks::setup(&mgr).expect("webhooks");
    mgr.webhook_registrations()
}

/// Registers the StorageBucket webhooks served by `server` with the API server behind
/// `client`: the configurations generated from [`registrations`]
/// (`ctrl::manifests::webhooks`), pointing at `server`'s URL.
pub async fn install_webhooks(client: kube::Client, server: &ctrl::webhook::Server, ca_pem: &str) {
    use ctrl::manifests::{Naming, webhooks};
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    let addr = server.local_addr().expect("bound webhook server");
    let regs = registrations();
    let naming = Naming::deployed("storagebucket");
    let url = webhooks::url_client(&format!("https://{addr}"), ca_pem);
    let m = webhooks::mutating(&regs, &naming, &url).expect("a defaulter");
    let v = webhooks::validating(&regs, &naming, &url).expect("a validator");
    let pp = PostParams::default();
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&pp, &m)
        .await
        .expect("create the mutating configuration");
    Api::<ValidatingWebhookConfiguration>::all(client)
        .create(&pp, &v)
        .await
        .expect("create the validating configuration");
}
