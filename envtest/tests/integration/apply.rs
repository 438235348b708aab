//! Acceptance checks 15–17 (server-side apply) through `kube::Client`'s `Patch::Apply`:
//! conflicts and force, removal of dropped fields, associative lists (containers by name,
//! ports by (port, protocol)), atomic lists, custom resources, `/scale`, and admission
//! webhooks on the apply path.

use crate::common;
use crate::webhook_server;

use async_trait::async_trait;
use common::{status_of, widget_ar, widget_crd};
use ctrl_runtime::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings, defaulting_webhook,
    validating_webhook,
};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

fn cm_apply(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data})
}

/// Applies ConfigMap `x` with `data` as `manager`.
async fn apply_cm(api: &Api<ConfigMap>, manager: &str, data: Value) -> kube::Result<ConfigMap> {
    api.patch(
        "x",
        &PatchParams::apply(manager),
        &Patch::Apply(cm_apply(data)),
    )
    .await
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

fn fields_of(meta: &kube::core::ObjectMeta, manager: &str) -> Value {
    meta.managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some(manager))
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| f.0.clone())
        .unwrap_or(Value::Null)
}

fn deployment_with(container: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container]}}}})
}

/// Upstream's OpenAPI declares container ports `x-kubernetes-list-map-keys: [containerPort,
/// protocol]` and service ports `[port, protocol]`, protocol defaulting to TCP, so the same
/// number over UDP and TCP are two elements and a port without protocol is the TCP one
/// (structured-merge-diff's defaulted map keys).
#[tokio::test]
async fn ports_are_keyed_by_port_and_protocol() {
    let env = common::env().await;
    let deps: Api<Deployment> = Api::namespaced(env.client(), "default");
    let out = deps
        .patch(
            "d",
            &PatchParams::apply("a"),
            &Patch::Apply(deployment_with(
                json!({"name": "dns", "image": "coredns", "ports": [
                    {"containerPort": 53, "protocol": "UDP", "name": "dns"},
                    {"containerPort": 53, "name": "dns-tcp"},
                ]}),
            )),
        )
        .await
        .unwrap();
    let ports = &fields_of(&out.metadata, "a")["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"dns\"}"]
        ["f:ports"];
    assert!(
        ports
            .get(r#"k:{"containerPort":53,"protocol":"UDP"}"#)
            .is_some(),
        "{ports}"
    );
    assert!(
        ports
            .get(r#"k:{"containerPort":53,"protocol":"TCP"}"#)
            .is_some(),
        "{ports}"
    );
    // Another manager naming the TCP element explicitly adds a field to it, not an element.
    let out = deps
        .patch(
            "d",
            &PatchParams::apply("b"),
            &Patch::Apply(deployment_with(json!({"name": "dns", "ports": [
                {"containerPort": 53, "protocol": "TCP", "hostPort": 1053},
            ]}))),
        )
        .await
        .unwrap();
    let c = &out.spec.unwrap().template.spec.unwrap().containers[0];
    let ports = c.ports.clone().unwrap();
    assert_eq!(ports.len(), 2, "{ports:?}");
    let tcp = ports
        .iter()
        .find(|p| p.name.as_deref() == Some("dns-tcp"))
        .unwrap();
    assert_eq!(tcp.host_port, Some(1053));

    let svcs: Api<Service> = Api::namespaced(env.client(), "default");
    let svc = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "d"}, "ports": ports}})
    };
    svcs.patch(
        "s",
        &PatchParams::apply("a"),
        &Patch::Apply(svc(json!([
            {"port": 53, "protocol": "UDP", "name": "u"},
            {"port": 53, "name": "t"},
        ]))),
    )
    .await
    .unwrap();
    let out = svcs
        .patch(
            "s",
            &PatchParams::apply("b"),
            &Patch::Apply(svc(
                json!([{"port": 53, "protocol": "TCP", "targetPort": 5353}]),
            )),
        )
        .await
        .unwrap();
    let ports = out.spec.unwrap().ports.unwrap();
    assert_eq!(ports.len(), 2, "{ports:?}");
    let t = ports
        .iter()
        .find(|p| p.name.as_deref() == Some("t"))
        .unwrap();
    assert!(t.target_port.is_some(), "{t:?}");
    assert!(
        fields_of(&out.metadata, "b")["f:spec"]["f:ports"]
            .get(r#"k:{"port":53,"protocol":"TCP"}"#)
            .is_some()
    );
}

/// An atomic list (container `args`) is owned as a whole: an Update that changed one element
/// owns the list, and an apply that sets another list conflicts with it on the list itself.
#[tokio::test]
async fn atomic_lists_are_owned_as_a_whole() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let main = |args: Value| json!({"name": "main", "image": "app", "args": args});
    api.patch(
        "d",
        &PatchParams::apply("a"),
        &Patch::Apply(deployment_with(main(json!(["-v", "1"])))),
    )
    .await
    .unwrap();
    let one = json_patch::Patch(vec![json_patch::PatchOperation::Replace(
        json_patch::ReplaceOperation {
            path: json_patch::jsonptr::PointerBuf::parse("/spec/template/spec/containers/0/args/1")
                .unwrap(),
            value: json!("2"),
        },
    )]);
    let by_editor = PatchParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    let out = api
        .patch("d", &by_editor, &Patch::<()>::Json(one))
        .await
        .unwrap();
    let args_path = r#"k:{"name":"main"}"#;
    assert_eq!(
        fields_of(&out.metadata, "editor")["f:spec"]["f:template"]["f:spec"]["f:containers"]
            [args_path],
        json!({"f:args": {}})
    );
    let st = status_of(
        api.patch(
            "d",
            &PatchParams::apply("a"),
            &Patch::Apply(deployment_with(main(json!(["-v", "3"])))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 409);
    assert!(
        st.message.contains(r#"conflict with "editor" using apps/v1: .spec.template.spec.containers[name="main"].args"#),
        "{}",
        st.message
    );
}

/// Apply to `/scale`: `spec.replicas` of the Scale is the parent's field, owned with
/// `subresource: scale`; it conflicts with the manager that set the replicas.
#[tokio::test]
async fn apply_to_scale_owns_the_parent_replicas() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let mut d: Deployment =
        serde_json::from_value(deployment_with(json!({"name": "c", "image": "nginx"}))).unwrap();
    d.spec.as_mut().unwrap().replicas = Some(1);
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    api.create(&pp, &d).await.unwrap();
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
    let st = status_of(
        api.patch_scale(
            "d",
            &PatchParams::apply("hpa"),
            &Patch::Apply(scale.clone()),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 409);
    assert!(
        st.message
            .contains(r#"conflict with "creator" using apps/v1: .spec.replicas"#),
        "{}",
        st.message
    );
    let out = api
        .patch_scale(
            "d",
            &PatchParams::apply("hpa").force(),
            &Patch::Apply(scale),
        )
        .await
        .unwrap();
    assert_eq!(out.spec.unwrap().replicas, Some(3));
    let now = api.get("d").await.unwrap();
    assert_eq!(now.spec.as_ref().unwrap().replicas, Some(3));
    let e = now
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some("hpa"))
        .unwrap();
    assert_eq!(e.operation.as_deref(), Some("Apply"));
    assert_eq!(e.subresource.as_deref(), Some("scale"));
    assert_eq!(
        e.fields_v1.as_ref().unwrap().0,
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(
        fields_of(&now.metadata, "creator")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
}

/// Labels every ConfigMap `defaulted: yes`.
struct Labeller;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Labeller {
    async fn set_defaults(
        &self,
        _req: &Request,
        cm: &mut ConfigMap,
    ) -> Result<(), ValidationError> {
        let labels = cm.metadata.labels.get_or_insert_default();
        labels.insert("defaulted".into(), "yes".into());
        Ok(())
    }
}

struct NoDeny;

fn refuses(cm: &ConfigMap) -> Result<Warnings, ValidationError> {
    match cm
        .data
        .as_ref()
        .and_then(|d| d.get("mode"))
        .map(String::as_str)
    {
        Some("deny") => Err(ValidationError::invalid("mode deny is refused")),
        _ => Ok(Vec::new()),
    }
}

#[async_trait]
impl CustomValidator<ConfigMap> for NoDeny {
    async fn validate_create(
        &self,
        _req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        refuses(cm)
    }
    async fn validate_update(
        &self,
        _req: &Request,
        _old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        refuses(new)
    }
}

/// Server-side apply is admitted like any other write: a validating denial stops it with
/// nothing stored, a mutating webhook's patch is stored (its fields owned by no one).
#[tokio::test]
async fn apply_goes_through_admission_webhooks() {
    let hook = webhook_server::start(|s| {
        s.register("/mutate", defaulting_webhook::<ConfigMap, _>(Labeller))
            .unwrap();
        s.register("/validate", validating_webhook::<ConfigMap, _>(NoDeny))
            .unwrap();
    })
    .await;
    let env = common::env().await;
    let hook_of = |name: &str, path: &str| {
        json!([{
            "name": name,
            "clientConfig": {"url": format!("{}{path}", hook.url), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }])
    };
    let m: MutatingWebhookConfiguration = serde_json::from_value(
        json!({"metadata": {"name": "m"}, "webhooks": hook_of("probe.cm.ctrl.dev", "/mutate")}),
    )
    .unwrap();
    let v: ValidatingWebhookConfiguration = serde_json::from_value(
        json!({"metadata": {"name": "v"}, "webhooks": hook_of("nodeny.cm.ctrl.dev", "/validate")}),
    )
    .unwrap();
    Api::<MutatingWebhookConfiguration>::all(env.client())
        .create(&PostParams::default(), &m)
        .await
        .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(env.client())
        .create(&PostParams::default(), &v)
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");

    let st = status_of(
        apply_cm(&api, "ctl", json!({"mode": "deny"}))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 422, "{}", st.message);
    assert!(
        st.message
            .contains(r#"admission webhook "nodeny.cm.ctrl.dev" denied the request"#),
        "{}",
        st.message
    );
    assert!(
        api.get_opt("x").await.unwrap().is_none(),
        "a denied apply stores nothing"
    );

    let out = apply_cm(&api, "ctl", json!({"mode": "ok"})).await.unwrap();
    let labels = out.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("defaulted").map(String::as_str),
        Some("yes"),
        "the mutating webhook's patch is stored"
    );
    assert_eq!(
        fields_of(&out.metadata, "ctl"),
        json!({"f:data": {"f:mode": {}}})
    );

    let st = status_of(
        apply_cm(&api, "ctl", json!({"mode": "deny"}))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 422);
    let now = api.get("x").await.unwrap();
    assert_eq!(now.data.unwrap()["mode"], "ok");
    assert_eq!(now.metadata.resource_version, out.metadata.resource_version);
}
