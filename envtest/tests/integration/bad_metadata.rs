//! Metadata of the wrong JSON type never reaches the store (issue 23, findings 2–4): custom
//! resources' `apiVersion`, `kind` and `metadata` are decoded into their typed form as
//! upstream coerces them into `ObjectMeta` — a 400 on POST and PUT, a 422 (`patch` cause) on
//! merge and JSON patches — so no object that would poison a typed list or watch is stored; a
//! stale `resourceVersion` written as a number cannot slip past the precondition; and an
//! established CRD keeps its scope and kind. Each case checks that objects, resourceVersions
//! and watches are untouched.

use crate::common;

use common::{Untouched, widget, widget_ar};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";

/// A Widget `w` in `default`, and what must stay as it is.
async fn setup() -> (ctrl_envtest::Environment, Untouched) {
    let (env, _) = common::env_with_widget().await;
    let before = Untouched::take(
        &env,
        &[
            "/apis/example.com/v1/widgets",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        ],
    )
    .await;
    (env, before)
}

/// Wrong types: (what is set, value), each at the top level or in metadata.
fn wrong_types() -> Vec<(&'static str, Value)> {
    vec![
        ("metadata.finalizers", json!("x")),
        ("metadata.finalizers", json!([1])),
        ("metadata.ownerReferences", json!("x")),
        ("metadata.ownerReferences", json!([{"uid": 5}])),
        ("metadata.labels", json!({"a": 1})),
        ("metadata.annotations", json!(["a"])),
        ("metadata.namespace", json!(5)),
        ("metadata.name", json!(5)),
        ("metadata.generateName", json!(true)),
        ("metadata", json!("x")),
        ("apiVersion", json!(5)),
        ("kind", json!(5)),
    ]
}

/// A full Widget `name` (for POST and PUT) with `field` set to `value`.
fn body_with(name: &str, field: &str, value: &Value, rv: Option<&str>) -> Value {
    let mut o = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 2},
    });
    if let Some(rv) = rv {
        o["metadata"]["resourceVersion"] = json!(rv);
    }
    set(&mut o, field, value.clone());
    o
}

/// Sets a dotted path (`metadata.x` or a top-level field).
fn set(o: &mut Value, field: &str, value: Value) {
    match field.split_once('.') {
        Some((a, b)) => o[a][b] = value,
        None => o[field] = value,
    }
}

#[tokio::test]
async fn wrong_metadata_types_are_400_on_create_and_update() {
    let (env, before) = setup().await;
    let (_, w) = common::raw(&env, "GET", &format!("{WIDGETS}/w"), None, "").await;
    let rv = w["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    for (field, value) in wrong_types() {
        let post = body_with("new", field, &value, None);
        let put = body_with("w", field, &value, Some(&rv));
        for (method, path, body) in [
            ("POST", WIDGETS.to_string(), post),
            ("PUT", format!("{WIDGETS}/w"), put),
        ] {
            let (code, status) = common::raw(
                &env,
                method,
                &path,
                Some(&body.to_string()),
                "application/json",
            )
            .await;
            let what = format!("{method} {field}={value}");
            assert_eq!(code, 400, "{what}: {status}");
            assert_eq!(status["reason"], "BadRequest", "{what}: {status}");
        }
    }
    before.check(&env, "create/update").await;
    before
        .check_no_events(&env, "after-bad-metadata-writes")
        .await;
}

/// A merge patch and a JSON patch of `item` are both 422 with a `patch` cause.
async fn assert_patches_refused(
    env: &ctrl_envtest::Environment,
    item: &str,
    merge: Value,
    json_patch: Value,
) {
    for (ct, patch) in [
        ("application/merge-patch+json", merge),
        ("application/json-patch+json", json_patch),
    ] {
        let (code, status) = common::raw(env, "PATCH", item, Some(&patch.to_string()), ct).await;
        let what = format!("{ct} {patch}");
        assert_eq!(code, 422, "{what}: {status}");
        assert_eq!(status["reason"], "Invalid", "{what}: {status}");
        assert_eq!(status["details"]["causes"][0]["field"], "patch", "{what}");
    }
}

/// The same on `/status`, whose write keeps all but status: the patched object is still
/// decoded first, as upstream's patcher does (a merge patch that names no metadata skips
/// decoding the stored metadata again, one that names it does not).
#[tokio::test]
async fn wrong_metadata_types_are_422_on_merge_and_json_patch() {
    let (env, before) = setup().await;
    for item in [format!("{WIDGETS}/w"), format!("{WIDGETS}/w/status")] {
        for (field, value) in wrong_types() {
            let mut merge = json!({"status": {"ready": true}});
            set(&mut merge, field, value.clone());
            let pointer = format!("/{}", field.replace('.', "/"));
            let json_patch = json!([{"op": "add", "path": pointer, "value": value}]);
            assert_patches_refused(&env, &item, merge, json_patch).await;
        }
    }
    before.check(&env, "patches").await;
    // A typed list of every Widget still decodes.
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    assert_eq!(api.list(&Default::default()).await.unwrap().items.len(), 1);
    before
        .check_no_events(&env, "after-bad-metadata-patches")
        .await;
}

#[tokio::test]
async fn a_numeric_resource_version_never_skips_the_precondition() {
    let (env, before) = setup().await;
    let item = format!("{WIDGETS}/w");
    // Stale (1) and current-looking numbers: a number is not a resourceVersion at all.
    for rv in [json!(1), json!(999_999), json!(1.5)] {
        let merge = json!({"metadata": {"resourceVersion": rv}, "spec": {"size": 9}});
        let json_patch = json!([
            {"op": "add", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec/size", "value": 9},
        ]);
        assert_patches_refused(&env, &item, merge, json_patch).await;
        let put = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "resourceVersion": rv}, "spec": {"size": 9}});
        let (code, status) = common::raw(
            &env,
            "PUT",
            &item,
            Some(&put.to_string()),
            "application/json",
        )
        .await;
        assert_eq!(code, 400, "PUT rv {rv}: {status}");
    }
    // The same stale value as a string is the precondition's 409.
    let merge = json!({"metadata": {"resourceVersion": "1"}, "spec": {"size": 9}});
    let (code, status) = common::raw(
        &env,
        "PATCH",
        &item,
        Some(&merge.to_string()),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 409, "{status}");
    // And on a built-in.
    let (code, status) = common::raw(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/none",
        Some(r#"{"metadata":{"resourceVersion":1}}"#),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 404, "{status}");
    before.check(&env, "numeric resourceVersion").await;
    before.check_no_events(&env, "after-numeric-rv").await;
}

/// The CRD as stored, with `edit` applied, PUT back.
async fn put_crd(env: &ctrl_envtest::Environment, edit: impl FnOnce(&mut Value)) -> (u16, Value) {
    let (_, mut crd) = common::raw(env, "GET", CRD, None, "").await;
    edit(&mut crd);
    common::raw(env, "PUT", CRD, Some(&crd.to_string()), "application/json").await
}

#[tokio::test]
async fn an_established_crd_keeps_its_scope_kind_group_and_plural() {
    let (env, before) = setup().await;
    let cases = [
        ("spec.scope", "Cluster"),
        ("spec.names.kind", "Gadget"),
        ("spec.group", "other.com"),
        ("spec.names.plural", "gadgets"),
    ];
    for (field, value) in cases {
        let pointer = format!("/{}", field.replace('.', "/"));
        let edit = |c: &mut Value| {
            if let Some(v) = c.pointer_mut(&pointer) {
                *v = json!(value);
            }
        };
        let (code, status) = put_crd(&env, edit).await;
        assert_eq!(code, 422, "{field}: {status}");
        assert_eq!(status["reason"], "Invalid", "{field}");
        let causes = status["details"]["causes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            causes.iter().any(|c| c["field"] == field
                && c["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("field is immutable")),
            "{field}: {status}"
        );
    }
    // The same through a merge patch.
    let (code, status) = common::raw(
        &env,
        "PATCH",
        CRD,
        Some(r#"{"spec":{"scope":"Cluster"}}"#),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 422, "{status}");
    before.check(&env, "CRD updates").await;
    before.check_no_events(&env, "after-crd-updates").await;
    // Objects stay readable and deletable; a second `w` cannot be created.
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.get("w").await.unwrap();
    let again = api
        .create(&PostParams::default(), &widget("w", json!({})))
        .await;
    assert_eq!(common::status_of(again.unwrap_err()).code, 409);
    api.delete("w", &Default::default()).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd = crds.get("widgets.example.com").await.unwrap();
    assert_eq!(crd.spec.scope, "Namespaced");
}

#[tokio::test]
async fn a_stored_version_cannot_leave_spec_versions() {
    let (env, _) = setup().await;
    // v2 becomes the storage version; v1 is still in status.storedVersions.
    let (code, status) = put_crd(&env, |c| {
        let mut v2 = c["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    })
    .await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["status"]["storedVersions"], json!(["v1", "v2"]));
    let before = Untouched::take(
        &env,
        &["/apis/apiextensions.k8s.io/v1/customresourcedefinitions"],
    )
    .await;
    let (code, status) = put_crd(&env, |c| {
        c["spec"]["versions"].as_array_mut().unwrap().remove(0);
    })
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "status.storedVersions[0]"
    );
    before.check(&env, "removing a stored version").await;
}
