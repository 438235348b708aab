//! `as=Table` (spec §1.19): lists, gets and watch events as `meta.k8s.io/v1` Tables with Name
//! and Age columns for built-ins and `additionalPrinterColumns` for custom resources.

mod common;

use common::{cm, widget, widget_ar, widget_crd};
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn builtin_list_and_get_are_tables() {
    let env = common::env().await;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, _, text) = common::raw_full(&env, "GET", path, None, "", &[("accept", TABLE)]).await;
    assert_eq!(code, 200);
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["kind"], "Table");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Age"]);
    assert_eq!(t["rows"][0]["cells"][0], "a");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let (code, _, text) = common::raw_full(
        &env,
        "GET",
        &format!("{path}/a"),
        None,
        "",
        &[("accept", TABLE)],
    )
    .await;
    assert_eq!(code, 200);
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn printer_columns_of_custom_resources() {
    let mut crd = serde_json::to_value(widget_crd(true)).unwrap();
    crd["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    let env = ctrl_envtest::Environment::builder()
        .crd(serde_json::from_value(crd).unwrap())
        .start()
        .await
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(&PostParams::default(), &widget("w", json!({"size": 7})))
        .await
        .unwrap();
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, _, text) = common::raw_full(&env, "GET", path, None, "", &[("accept", TABLE)]).await;
    assert_eq!(code, 200, "{text}");
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["columnDefinitions"][1]["name"], "Size");
    assert_eq!(t["rows"][0]["cells"], json!(["w", 7]));
}
