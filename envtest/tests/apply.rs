//! Acceptance checks 15–17 (server-side apply) through `kube::Client`'s `Patch::Apply`.

mod common;

use common::{status_of, widget_ar, widget_crd};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

fn cm_apply(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data})
}

fn managers_of(obj: &ConfigMap, field: &str) -> Vec<String> {
    obj.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0["f:data"].get(format!("f:{field}")).is_some())
        })
        .map(|e| e.manager.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn conflict_then_force() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .patch(
            "x",
            &PatchParams::apply("a"),
            &Patch::Apply(cm_apply(json!({"k": "1", "o": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(managers_of(&created, "k"), ["a"]);
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!(entry.operation.as_deref(), Some("Apply"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    // Same value: shared ownership, no conflict.
    let shared = api
        .patch(
            "x",
            &PatchParams::apply("b"),
            &Patch::Apply(cm_apply(json!({"o": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(managers_of(&shared, "o"), ["a", "b"]);
    // Another value without force: 409 naming the field and the manager; nothing changes.
    let st = status_of(
        api.patch(
            "x",
            &PatchParams::apply("b"),
            &Patch::Apply(cm_apply(json!({"k": "2"}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "Conflict");
    assert!(
        st.message.contains("conflict with \"a\"") && st.message.contains(".data.k"),
        "{}",
        st.message
    );
    let causes = st.details.unwrap().causes;
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.k");
    let now = api.get("x").await.unwrap();
    assert_eq!(
        now.metadata.resource_version,
        shared.metadata.resource_version
    );
    // With force: b takes the field.
    let forced = api
        .patch(
            "x",
            &PatchParams::apply("b").force(),
            &Patch::Apply(cm_apply(json!({"k": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["k"], "2");
    assert_eq!(managers_of(&forced, "k"), ["b"]);
}

#[tokio::test]
async fn dropped_fields_are_removed_unless_someone_else_owns_them() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let pp = PatchParams::apply("a");
    api.patch(
        "x",
        &pp,
        &Patch::Apply(cm_apply(json!({"gone": "1", "kept": "1", "stay": "1"}))),
    )
    .await
    .unwrap();
    api.patch(
        "x",
        &PatchParams::apply("b"),
        &Patch::Apply(cm_apply(json!({"kept": "1"}))),
    )
    .await
    .unwrap();
    let out = api
        .patch("x", &pp, &Patch::Apply(cm_apply(json!({"stay": "1"}))))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert!(!data.contains_key("gone"), "{data:?}");
    assert_eq!(data["kept"], "1", "b still owns it");
    assert_eq!(data["stay"], "1");
    // A no-op apply changes nothing (same resourceVersion).
    let again = api
        .patch("x", &pp, &Patch::Apply(cm_apply(json!({"stay": "1"}))))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        out.metadata.resource_version
    );
}

#[tokio::test]
async fn request_errors_and_create() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // Without fieldManager: 422 (kube's PatchParams refuses to send it, so go raw).
    let path = "/api/v1/namespaces/default/configmaps/x";
    let body = cm_apply(json!({"a": "1"})).to_string();
    let (code, st) = common::raw(
        &env,
        "PATCH",
        path,
        Some(&body),
        "application/apply-patch+yaml",
    )
    .await;
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert!(
        st["message"].as_str().unwrap().contains("fieldManager"),
        "{st}"
    );
    // managedFields in the body: 400.
    let with_mf = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "managedFields": [{"manager": "m"}]}});
    let st = status_of(
        api.patch("x", &PatchParams::apply("a"), &Patch::Apply(with_mf))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 400, "{}", st.message);
    // force on a merge patch: 422.
    let (code, st) = common::raw(
        &env,
        "PATCH",
        &format!("{path}?force=true"),
        Some("{}"),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 422, "{st}");
    assert!(
        api.get_opt("x").await.unwrap().is_none(),
        "nothing was created"
    );
    // Apply to a missing object creates it: 201.
    let (code, obj) = common::raw(
        &env,
        "PATCH",
        &format!("{path}?fieldManager=a"),
        Some(&body),
        "application/apply-patch+yaml",
    )
    .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["a"], "1");
    assert_eq!(obj["metadata"]["managedFields"][0]["manager"], "a");
    // YAML bodies work too.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  b: two\n";
    let (code, obj) = common::raw(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/y?fieldManager=a",
        Some(yaml),
        "application/apply-patch+yaml",
    )
    .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["b"], "two");
}

#[tokio::test]
async fn containers_are_associative_for_builtins() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let dep = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": containers}}}})
    };
    api.patch(
        "d",
        &PatchParams::apply("a"),
        &Patch::Apply(dep(json!([{"name": "main", "image": "nginx"}]))),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "d",
            &PatchParams::apply("b"),
            &Patch::Apply(dep(json!([{"name": "sidecar", "image": "busybox"}]))),
        )
        .await
        .unwrap();
    let names: Vec<String> = out
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(
        names,
        ["main", "sidecar"],
        "each manager keeps its own container"
    );
    let st = status_of(
        api.patch(
            "d",
            &PatchParams::apply("b"),
            &Patch::Apply(dep(json!([{"name": "main", "image": "httpd"}]))),
        )
        .await
        .unwrap_err(),
    );
    assert!(
        st.message
            .contains(r#".spec.template.spec.containers[name="main"].image"#),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn custom_resources_apply_and_honour_status() {
    let env = ctrl_envtest::Environment::builder()
        .crd(widget_crd(true))
        .start()
        .await
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    let w = |spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": spec, "status": {"ready": true}})
    };
    let out = api
        .patch(
            "w",
            &PatchParams::apply("ctl"),
            &Patch::Apply(w(json!({"size": 1, "color": "red"}))),
        )
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["size"], 1);
    assert!(
        out.data.get("status").is_none(),
        "status is ignored on the main endpoint"
    );
    let out = api
        .patch(
            "w",
            &PatchParams::apply("ctl"),
            &Patch::Apply(w(json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(out.data["spec"], json!({"size": 2}));
    assert_eq!(out.metadata.generation, Some(2));
    let out = api
        .patch_status(
            "w",
            &PatchParams::apply("ctl-status"),
            &Patch::Apply(w(json!({}))),
        )
        .await
        .unwrap();
    assert_eq!(out.data["status"]["ready"], true);
    let entry = out
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .find(|e| e.manager.as_deref() == Some("ctl-status"))
        .unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("status"));
}
