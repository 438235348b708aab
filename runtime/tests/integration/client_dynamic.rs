//! The client's dynamic writes against ctrl-envtest (controller-runtime's unstructured
//! client): a CRD installed at runtime and used only through `DynamicObject` and its
//! `ApiResource` — create, update, patch (merge, JSON), server-side apply with field
//! ownership conflicts, delete, delete-all-of, and the status subresource.

use std::sync::Arc;
use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, ListOptions, Options, Reader};
use ctrl_runtime::client::{
    Client, DeleteParams, ObjectWriter, Patch, PatchParams, ignore_not_found,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const GROUP: &str = "dyn.example.com";

/// A CRD of `kind` (plural `<kind>s`, lowercase) with a status subresource.
fn crd(kind: &str, scope: &str) -> (CustomResourceDefinition, ApiResource) {
    let plural = format!("{}s", kind.to_lowercase());
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .expect("valid CRD");
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", kind), &plural);
    (crd, ar)
}

async fn setup(kind: &str, scope: &str) -> (Environment, Client, ApiResource, CancellationToken) {
    let env = Environment::start().await.expect("envtest");
    let (crd, ar) = crd(kind, scope);
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("install CRD");
    let cache = Cache::new(env.client(), Options::default());
    let client = Client::new(env.client(), cache.clone()).with_field_owner("ctrl-test");
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    (env, client, ar, ctx)
}

/// A `DynamicObject` with no `apiVersion`/`kind`: the client fills them from the
/// `ApiResource`.
fn object(ns: Option<&str>, name: &str, data: Value) -> DynamicObject {
    DynamicObject {
        types: None,
        metadata: ObjectMeta {
            namespace: ns.map(str::to_string),
            name: Some(name.into()),
            ..Default::default()
        },
        data,
    }
}

fn rv(o: &DynamicObject) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

/// Reads `default/name` through the cache until `check` holds.
async fn cached_until(
    client: &Client,
    ar: &ApiResource,
    name: &str,
    check: impl Fn(Option<&DynamicObject>) -> bool,
) -> Option<Arc<DynamicObject>> {
    for _ in 0..500 {
        let got = ignore_not_found(client.get_with::<DynamicObject>(ar, "default", name).await)
            .expect("cached read");
        if check(got.as_deref()) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the cache never caught up on {name}");
}

#[tokio::test]
async fn dynamic_create_update_patch_and_delete_of_a_crd_installed_at_runtime() {
    let (_env, client, ar, ctx) = setup("Gizmo", "Namespaced").await;

    let created = client
        .create_with(
            &ar,
            &object(Some("default"), "g1", json!({"spec": {"size": 1}})),
        )
        .await
        .expect("create");
    assert_eq!(
        created.types,
        Some(TypeMeta {
            api_version: format!("{GROUP}/v1"),
            kind: "Gizmo".into()
        })
    );
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.data["spec"]["size"], 1);
    let dup = client
        .create_with(&ar, &object(Some("default"), "g1", json!({})))
        .await
        .expect_err("a second create must fail");
    assert!(dup.is_already_exists(), "{dup}");
    assert!(
        dup.to_string()
            .starts_with(&format!("create {GROUP}/v1/Gizmo default/g1")),
        "{dup}"
    );
    cached_until(&client, &ar, "g1", |o| o.is_some()).await;

    let mut bigger = created.clone();
    bigger.data["spec"]["size"] = json!(2);
    let updated = client.update_with(&ar, &bigger).await.expect("update");
    assert_eq!(updated.data["spec"]["size"], 2);
    assert_ne!(rv(&updated), rv(&created));
    let stale = client
        .update_with(&ar, &created)
        .await
        .expect_err("a stale resourceVersion must conflict");
    assert!(stale.is_conflict(), "{stale}");

    let merged = client
        .patch_with(
            &ar,
            &updated,
            &Patch::Merge(json!({"spec": {"color": "red"}})),
            PatchParams::default(),
        )
        .await
        .expect("merge patch");
    assert_eq!(merged.data["spec"], json!({"size": 2, "color": "red"}));
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/size", "value": 3}]))
            .expect("json patch");
    let patched = client
        .patch_with(
            &ar,
            &merged,
            &Patch::<()>::Json(ops),
            PatchParams::default(),
        )
        .await
        .expect("json patch");
    assert_eq!(patched.data["spec"]["size"], 3);
    cached_until(&client, &ar, "g1", |o| {
        o.is_some_and(|o| o.data["spec"]["size"] == 3)
    })
    .await;

    client
        .delete_with(&ar, &patched, &DeleteParams::default())
        .await
        .expect("delete");
    let gone = client
        .api_reader()
        .get_with::<DynamicObject>(&ar, "default", "g1")
        .await
        .expect_err("deleted");
    assert!(gone.is_not_found(), "{gone}");
    cached_until(&client, &ar, "g1", |o| o.is_none()).await;
    ctx.cancel();
}

#[tokio::test]
async fn dynamic_server_side_apply_tracks_field_managers() {
    let (_env, client, ar, ctx) = setup("Gadget", "Namespaced").await;
    let intent = |owner: &str| object(Some("default"), "a1", json!({"spec": {"owner": owner}}));

    let first = client
        .apply_with(&ar, &intent("a"), Some("manager-a"), false)
        .await
        .expect("apply creates");
    assert_eq!(first.data["spec"]["owner"], "a");
    let managers: Vec<_> = first
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(managers.contains(&"manager-a".to_string()), "{managers:?}");

    let conflict = client
        .apply_with(&ar, &intent("b"), Some("manager-b"), false)
        .await
        .expect_err("another manager's field without force must conflict");
    assert!(conflict.is_conflict(), "{conflict}");
    let forced = client
        .apply_with(&ar, &intent("b"), Some("manager-b"), true)
        .await
        .expect("forced apply");
    assert_eq!(forced.data["spec"]["owner"], "b");
    ctx.cancel();
}

#[tokio::test]
async fn dynamic_status_writes_go_to_the_status_subresource() {
    let (_env, client, ar, ctx) = setup("Widget", "Namespaced").await;
    let created = client
        .create_with(
            &ar,
            &object(Some("default"), "w1", json!({"spec": {"size": 1}})),
        )
        .await
        .expect("create");

    let mut change = created.clone();
    change.data["spec"]["size"] = json!(99);
    change.data["status"] = json!({"phase": "Ready"});
    let updated = client
        .status()
        .update_with(&ar, &change)
        .await
        .expect("status update");
    assert_eq!(updated.data["status"]["phase"], "Ready");
    assert_eq!(
        updated.data["spec"]["size"], 1,
        "a status write leaves the spec alone"
    );
    let stale = client
        .status()
        .update_with(&ar, &change)
        .await
        .expect_err("a stale resourceVersion must conflict");
    assert!(stale.is_conflict(), "{stale}");
    assert!(stale.to_string().starts_with("status update"), "{stale}");

    let patched = client
        .status()
        .patch_with(
            &ar,
            &updated,
            &Patch::Merge(json!({"status": {"phase": "Done"}})),
            PatchParams::default(),
        )
        .await
        .expect("status patch");
    assert_eq!(patched.data["status"]["phase"], "Done");

    let applied = client
        .status()
        .apply_with(
            &ar,
            &object(Some("default"), "w1", json!({"status": {"observed": 5}})),
            Some("status-manager"),
            true,
        )
        .await
        .expect("status apply");
    assert_eq!(applied.data["status"]["observed"], 5);
    assert_eq!(applied.data["spec"]["size"], 1);
    ctx.cancel();
}

#[tokio::test]
async fn dynamic_cluster_scoped_objects_and_delete_all_of() {
    let (_env, client, ar, ctx) = setup("Doohickey", "Cluster").await;
    for (name, tier) in [("d1", "gold"), ("d2", "gold"), ("d3", "iron")] {
        let mut o = object(None, name, json!({"spec": {}}));
        o.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
        let made = client.create_with(&ar, &o).await.expect("create");
        assert_eq!(made.metadata.namespace, None);
    }
    let reader = client.api_reader();
    let d1 = reader
        .get_with::<DynamicObject>(&ar, "", "d1")
        .await
        .expect("uncached get");
    assert_eq!(d1.metadata.labels.unwrap_or_default()["tier"], "gold");

    client
        .delete_all_of_with::<DynamicObject>(
            &ar,
            None,
            &ListParams::default().labels("tier=gold"),
            &DeleteParams::default(),
        )
        .await
        .expect("delete all gold");
    let left: Vec<String> = reader
        .list_with::<DynamicObject>(&ar, &ListOptions::new())
        .await
        .expect("list")
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    assert_eq!(left, ["d3"]);
    ctx.cancel();
}
