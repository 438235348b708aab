//! OpenAPI v3 (`k8s.io/kube-openapi/pkg/handler3/handler.go`): the root lists every group-version
//! with a content hash in its URL; each document carries full schemas (built-ins from k8s-openapi,
//! custom resources from their CRD, wrapped as the apiserver does) and every schema they reference,
//! and a CRD change gives its group-version a new hash and a new document.

use crate::common;

use std::collections::BTreeSet;

use common::widget_crd;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

async fn get(env: &ctrl_envtest::Environment, path: &str) -> Value {
    let (code, v) = common::raw(env, "GET", path, None, "").await;
    assert_eq!(code, 200, "GET {path}: {v}");
    v
}

/// The document URL the root gives for `gv` (`apis/apps/v1`).
async fn doc_url(env: &ctrl_envtest::Environment, gv: &str) -> String {
    let root = get(env, "/openapi/v3").await;
    root["paths"][gv]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{gv} not in the OpenAPI root: {root}"))
        .to_string()
}

fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| match (k.as_str(), x) {
            ("$ref", Value::String(r)) => {
                out.insert(r.clone());
            }
            _ => refs(x, out),
        }),
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

/// Every `$ref` of the document resolves inside it.
fn assert_self_contained(doc: &Value) {
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut all = BTreeSet::new();
    refs(doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap();
        assert!(schemas.contains_key(name), "dangling {r}");
    }
}

#[tokio::test]
async fn builtin_documents_have_full_schemas() {
    let env = common::env().await;
    let doc = get(&env, &doc_url(&env, "apis/apps/v1").await).await;
    let schemas = &doc["components"]["schemas"];
    let deploy = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deploy["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    // A $ref with a description is written as allOf, as the apiserver does.
    assert_eq!(
        deploy["properties"]["spec"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    );
    let replicas = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
    assert_eq!(replicas["type"], "integer");
    assert!(
        replicas["description"]
            .as_str()
            .unwrap()
            .contains("Number of desired pods")
    );
    assert!(schemas[OBJECT_META].is_object());
    assert!(schemas["io.k8s.api.core.v1.PodSpec"].is_object());
    // Only this group-version's kinds carry a GVK.
    let kinds: BTreeSet<&str> = schemas
        .as_object()
        .unwrap()
        .values()
        .filter_map(|s| s["x-kubernetes-group-version-kind"][0]["kind"].as_str())
        .collect();
    assert!(
        kinds.contains("StatefulSet") && !kinds.contains("Pod"),
        "{kinds:?}"
    );
    assert_self_contained(&doc);
    // The core group's document, served at its own path.
    let core = get(&env, &doc_url(&env, "api/v1").await).await;
    assert!(core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"].is_object());
    assert_self_contained(&core);
    let (code, _) = common::raw(
        &env,
        "GET",
        "/openapi/v3/apis/nope.example.com/v1",
        None,
        "",
    )
    .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn crd_schemas_are_published_and_rehashed_on_change() {
    let env = common::env().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    crds.create(&PostParams::default(), &widget_crd(true))
        .await
        .unwrap();
    let url = doc_url(&env, "apis/example.com/v1").await;
    let doc = get(&env, &url).await;
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"]["maximum"].as_f64(),
        Some(100.0)
    );
    assert_eq!(widget["properties"]["kind"]["type"], "string");
    assert_eq!(
        widget["properties"]["metadata"]["allOf"][0]["$ref"],
        format!("#/components/schemas/{OBJECT_META}")
    );
    assert_self_contained(&doc);
    // The same content keeps its URL; a schema change gives a new hash and document.
    assert_eq!(doc_url(&env, "apis/example.com/v1").await, url);
    let apps = doc_url(&env, "apis/apps/v1").await;
    let mut crd = crds.get("widgets.example.com").await.unwrap();
    let mut v = serde_json::to_value(&crd.spec.versions[0]).unwrap();
    v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] =
        json!({"type": "string", "description": "The widget's shape."});
    crd.spec.versions[0] = serde_json::from_value(v).unwrap();
    crds.replace("widgets.example.com", &PostParams::default(), &crd)
        .await
        .unwrap();
    let changed = doc_url(&env, "apis/example.com/v1").await;
    assert_ne!(changed, url);
    assert_eq!(
        doc_url(&env, "apis/apps/v1").await,
        apps,
        "other documents keep their hash"
    );
    let doc = get(&env, &changed).await;
    assert_eq!(
        doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]["shape"]
            ["description"],
        "The widget's shape."
    );
}
