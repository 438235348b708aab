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
