//! The client surface against ctrl-envtest over HTTP: dry-run writes (per call and a
//! dry-run client), the subresource client (`scale`, `eviction`), the namespaced
//! client, field validation (`Strict` / `Warn` / `Ignore`, with the server's
//! `Warning` headers logged), and types read uncached (`disable_for`), which the
//! server's request log shows.

use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, ListOptions, Options, Reader};
use ctrl_runtime::client::{
    Client, DeleteParams, FieldValidation, ObjectWriter, Source, WarningLogger, WriteOptions,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Setup {
    env: Environment,
    client: Client,
    warnings: WarningLogger,
    _stop: tokio_util::sync::DropGuard,
}

async fn setup() -> Setup {
    let env = Environment::start().await.expect("envtest");
    let warnings = WarningLogger::new();
    let kube = warnings.clone().wrap(env.client());
    let cache = Cache::new(kube.clone(), Options::default());
    let client = Client::new(kube, cache.clone());
    let ctx = CancellationToken::new();
    let c = ctx.clone();
    tokio::spawn(async move { cache.start(c).await });
    Setup {
        env,
        client,
        warnings,
        _stop: ctx.drop_guard(),
    }
}

fn cm(ns: Option<&str>, name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: ns.map(str::to_string),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), v.to_string())].into()),
        ..Default::default()
    }
}

async fn server_cm(s: &Setup, name: &str) -> Option<ConfigMap> {
    Api::<ConfigMap>::namespaced(s.env.client(), "default")
        .get_opt(name)
        .await
        .expect("get")
}

#[tokio::test]
async fn dry_run_writes_return_what_would_be_stored_and_store_nothing() {
    let s = setup().await;
    let dry = WriteOptions::new().dry_run_all();
    let would = s
        .client
        .create(&cm(Some("default"), "a", "1"))
        .opts(&dry)
        .await
        .expect("dry-run create");
    assert_eq!(would.metadata.name.as_deref(), Some("a"));
    assert!(
        would.metadata.uid.is_some(),
        "the server fills what it would store"
    );
    assert!(
        server_cm(&s, "a").await.is_none(),
        "a dry run stores nothing"
    );

    let stored = s
        .client
        .create(&cm(Some("default"), "a", "1"))
        .await
        .expect("create");
    let dry_client = s.client.clone().with_dry_run();
    assert!(dry_client.is_dry_run());
    let mut changed = stored.clone();
    changed.data = Some([("k".to_string(), "2".to_string())].into());
    let would = dry_client.update(&changed).await.expect("dry-run update");
    assert_eq!(
        would
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("2")
    );
    let patch = json!({"data": {"k": "3"}});
    let patched = dry_client
        .patch(
            &stored,
            &kube::api::Patch::Merge(&patch),
            Default::default(),
        )
        .await
        .expect("dry-run patch");
    assert_eq!(
        patched
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("3")
    );
    dry_client
        .delete(&stored, &DeleteParams::default())
        .await
        .expect("dry-run delete");
    let now = server_cm(&s, "a").await.expect("still there");
    assert_eq!(now.data, stored.data);
    assert_eq!(
        now.metadata.resource_version,
        stored.metadata.resource_version
    );
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }))
    .expect("deployment")
}

#[tokio::test]
async fn scale_subresource_round_trips() {
    let s = setup().await;
    let d = s
        .client
        .create(&deployment("web", 1))
        .await
        .expect("create");
    let scale = s.client.sub_resource("scale");
    let mut sc: Scale = scale.get(&d).await.expect("get scale");
    assert_eq!(sc.spec.as_ref().and_then(|s| s.replicas), Some(1));
    sc.spec.get_or_insert_with(Default::default).replicas = Some(4);
    let dry = scale
        .update(&d, &sc, &WriteOptions::new().dry_run_all())
        .await
        .expect("dry-run scale");
    assert_eq!(dry.spec.as_ref().and_then(|s| s.replicas), Some(4));
    let stored = s
        .client
        .api_reader()
        .get::<Deployment>("default", "web")
        .await
        .expect("get");
    assert_eq!(stored.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let out = scale
        .update(&d, &sc, &WriteOptions::new())
        .await
        .expect("scale");
    assert_eq!(out.spec.as_ref().and_then(|s| s.replicas), Some(4));
    let patch = json!({"spec": {"replicas": 2}});
    let out: Scale = scale
        .patch(&d, &kube::api::Patch::Merge(&patch), Default::default())
        .await
        .expect("patch scale");
    assert_eq!(out.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let stored = s
        .client
        .api_reader()
        .get::<Deployment>("default", "web")
        .await
        .expect("get");
    assert_eq!(stored.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let missing = scale
        .get::<ConfigMap, Scale>(&cm(Some("default"), "x", "1"))
        .await
        .expect_err("configmaps have no scale");
    assert_eq!(missing.code(), Some(404), "{missing}");
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("pod")
}

fn eviction(name: &str, delete_options: serde_json::Value) -> Eviction {
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
        "deleteOptions": delete_options,
    }))
    .expect("eviction")
}

#[tokio::test]
async fn eviction_deletes_the_pod_respecting_its_delete_options() {
    let s = setup().await;
    let p = s.client.create(&pod("p")).await.expect("create");
    let pods = Api::<Pod>::namespaced(s.env.client(), "default");
    let evict = s.client.sub_resource("eviction");
    let _: serde_json::Value = evict
        .create(
            &p,
            &eviction("p", json!({"dryRun": ["All"]})),
            &WriteOptions::new(),
        )
        .await
        .expect("dry-run eviction");
    assert!(pods.get_opt("p").await.expect("get").is_some());
    let stale = evict
        .create::<_, _, serde_json::Value>(
            &p,
            &eviction("p", json!({"preconditions": {"uid": "not-the-uid"}})),
            &WriteOptions::new(),
        )
        .await
        .expect_err("a failed precondition refuses the eviction");
    assert!(stale.is_conflict(), "{stale}");
    let wrong = evict
        .create::<_, _, serde_json::Value>(&p, &eviction("other", json!({})), &WriteOptions::new())
        .await
        .expect_err("the names must match");
    assert_eq!(wrong.code(), Some(400), "{wrong}");
    assert!(pods.get_opt("p").await.expect("get").is_some());
    let status: serde_json::Value = evict
        .create(&p, &eviction("p", json!({})), &WriteOptions::new())
        .await
        .expect("eviction");
    assert_eq!(status["status"], "Success");
    assert!(pods.get_opt("p").await.expect("get").is_none(), "evicted");
}

#[tokio::test]
async fn a_namespaced_client_confines_every_call_to_its_namespace() {
    let s = setup().await;
    Api::<k8s_openapi::api::core::v1::Namespace>::all(s.env.client())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    s.client
        .create(&cm(Some("other"), "elsewhere", "1"))
        .await
        .expect("create");
    let nc = s.client.namespaced("default");
    assert_eq!(nc.namespace(), "default");
    let made = nc.create(&cm(None, "here", "1")).await.expect("create");
    assert_eq!(made.metadata.namespace.as_deref(), Some("default"));
    let refused = nc
        .create(&cm(Some("other"), "there", "1"))
        .await
        .expect_err("another namespace is refused");
    assert!(matches!(*refused.source, Source::Refused(_)), "{refused}");
    assert!(
        refused.to_string().contains(
            "namespace other of the object there does not match the namespace default on the client"
        ),
        "{refused}"
    );
    let listed = nc
        .list::<ConfigMap>(&ListOptions::new())
        .await
        .expect("list");
    let names: Vec<_> = listed
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert!(names.contains(&"here".to_string()), "{names:?}");
    assert!(!names.contains(&"elsewhere".to_string()), "{names:?}");
    let err = nc
        .list::<ConfigMap>(&ListOptions::new().in_namespace("other"))
        .await
        .expect_err("listing another namespace is refused");
    assert!(matches!(*err.source, Source::Refused(_)), "{err}");
    let got = nc.get::<ConfigMap>("", "here").await.expect("get");
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));
    let got = nc.get::<ConfigMap>("default", "here").await.expect("get");
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));
    let err = nc
        .get::<ConfigMap>("other", "here")
        .await
        .expect_err("getting from another namespace is refused");
    assert!(matches!(*err.source, Source::Refused(_)), "{err}");
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));
    nc.delete(&cm(None, "here", "1"), &DeleteParams::default())
        .await
        .expect("delete");
    assert!(server_cm(&s, "here").await.is_none());
}

fn widgets() -> (CustomResourceDefinition, ApiResource) {
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fv.example.com"},
        "spec": {
            "group": "fv.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                }}},
            }],
        },
    }))
    .expect("crd");
    let gvk = GroupVersionKind::gvk("fv.example.com", "v1", "Widget");
    (crd, ApiResource::from_gvk_with_plural(&gvk, "widgets"))
}

fn widget(name: &str) -> DynamicObject {
    let mut o = DynamicObject::new(name, &widgets().1).within("default");
    o.data = json!({"spec": {"size": 1, "colour": "red"}});
    o
}

#[tokio::test]
async fn field_validation_strict_warn_and_ignore() {
    let s = setup().await;
    let (crd, ar) = widgets();
    Api::<CustomResourceDefinition>::all(s.env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("crd");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let strict = WriteOptions::new().field_validation(FieldValidation::Strict);
    let err = s
        .client
        .create_with(&ar, &widget("w1"))
        .opts(&strict)
        .await
        .expect_err("strict refuses unknown fields");
    assert_eq!(err.code(), Some(400), "{err}");
    assert!(
        err.to_string()
            .contains(r#"strict decoding error: unknown field "spec.colour""#),
        "{err}"
    );
    assert!(s.warnings.seen().is_empty());

    let ignore = s
        .client
        .clone()
        .with_field_validation(FieldValidation::Ignore);
    let made = ignore
        .create_with(&ar, &widget("w2"))
        .await
        .expect("ignore");
    assert_eq!(
        made.data["spec"],
        json!({"size": 1}),
        "unknown fields are dropped"
    );
    assert!(s.warnings.seen().is_empty(), "{:?}", s.warnings.seen());

    let warn = WriteOptions::new().field_validation(FieldValidation::Warn);
    let made = s
        .client
        .create_with(&ar, &widget("w3"))
        .opts(&warn)
        .await
        .expect("warn");
    assert_eq!(made.data["spec"], json!({"size": 1}));
    assert_eq!(
        s.warnings.seen(),
        vec![r#"unknown field "spec.colour""#.to_string()]
    );

    // Duplicate fields (which no typed client can send) under Strict, by hand.
    let body = br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"a": "1", "a": "2"}}"#;
    let req = http::Request::post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict")
        .header("content-type", "application/json")
        .body(body.to_vec())
        .expect("request");
    let err = s
        .env
        .client()
        .request_text(req)
        .await
        .expect_err("duplicates refused");
    assert!(
        err.to_string().contains(r#"duplicate field "data.a""#),
        "{err}"
    );
    assert!(server_cm(&s, "dup").await.is_none());
}

#[tokio::test]
async fn reads_of_disabled_types_go_to_the_server() {
    let s = setup().await;
    s.client
        .create(&cm(Some("default"), "fresh", "1"))
        .await
        .expect("create");
    let client = s.client.clone().disable_for::<ConfigMap>();
    s.env.faults().clear_requests();
    let got = client
        .get::<ConfigMap>("default", "fresh")
        .await
        .expect("get");
    assert_eq!(got.metadata.name.as_deref(), Some("fresh"));
    let listed = client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("list");
    assert!(
        listed
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("fresh"))
    );
    let reqs = s.env.faults().requests();
    let cms: Vec<_> = reqs
        .iter()
        .filter(|r| r.resource.as_deref() == Some("configmaps"))
        .collect();
    assert!(
        cms.iter()
            .any(|r| r.method == "GET" && r.path == "/api/v1/namespaces/default/configmaps/fresh"),
        "{cms:?}"
    );
    assert!(cms.iter().any(|r| r.is_list()), "{cms:?}");
    assert!(
        !cms.iter().any(|r| r.is_watch()),
        "no informer was started: {cms:?}"
    );
    assert!(format!("{:?}", client.cache()).contains("informers: []"));
}
