//! Acceptance check 14 (strategic merge patch) and its directives, through `kube::Client`.

use crate::common;

use common::status_of;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "finalizers": ["a.example.com/x", "b.example.com/y"]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{
                    "name": "main", "image": "nginx:1",
                    "env": [{"name": "A", "value": "1"}],
                    "ports": [{"containerPort": 80}],
                }]},
            },
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn adding_a_container_merges_by_name() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &deployment())
        .await
        .unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "image": "busybox"},
        {"name": "main", "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 8080}]},
    ]}}}});
    let out = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let pod = out.spec.unwrap().template.spec.unwrap();
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["main", "sidecar"]);
    let main = &pod.containers[0];
    assert_eq!(
        main.image.as_deref(),
        Some("nginx:1"),
        "unpatched fields stay"
    );
    let env_names: Vec<&str> = main
        .env
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(env_names, ["A", "B"]);
    assert_eq!(main.ports.as_ref().unwrap().len(), 2);
    assert_eq!(out.metadata.generation, Some(2));
}

#[tokio::test]
async fn directives_delete_replace_retain_and_primitive_lists() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &deployment())
        .await
        .unwrap();
    let patch = json!({
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]},
        "spec": {"template": {"spec": {"containers": [
            {"name": "main", "env": [{"name": "A", "$patch": "delete"}]},
        ]}}},
    });
    let out = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    assert_eq!(out.metadata.finalizers.unwrap(), ["b.example.com/y"]);
    let c = &out.spec.unwrap().template.spec.unwrap().containers[0];
    assert!(
        c.env.is_none(),
        "the only env entry was deleted: {:?}",
        c.env
    );
    // $patch: replace on a list replaces it instead of merging.
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"$patch": "replace"}, {"name": "other", "image": "x"},
    ]}}}});
    let out = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let cs = out.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].name, "other");
    // $retainKeys drops the keys not listed.
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let out = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    assert_eq!(
        out.spec.unwrap().strategy.unwrap().type_.as_deref(),
        Some("Recreate")
    );
    // Finalizers are a set: adding merges, null removes keys like a merge patch.
    let patch = json!({"metadata": {"finalizers": ["c.example.com/z"]}});
    let out = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    assert_eq!(
        out.metadata.finalizers.unwrap(),
        ["b.example.com/y", "c.example.com/z"]
    );
}

#[tokio::test]
async fn configmap_data_merges_and_null_deletes() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(
        &PostParams::default(),
        &common::cm("c", &[("a", "1"), ("b", "1")]),
    )
    .await
    .unwrap();
    let out = api
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["b", "c"]);
}

#[tokio::test]
async fn strategic_on_custom_resource_is_415() {
    let (_env, api) = common::env_with_widget().await;
    let st = status_of(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 415);
    assert_eq!(st.reason, "UnsupportedMediaType");
    assert!(
        st.message.contains("application/merge-patch+json"),
        "{}",
        st.message
    );
    assert_eq!(api.get("w").await.unwrap().data["spec"]["size"], 1);
}

#[tokio::test]
async fn element_without_merge_key_is_400() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &deployment())
        .await
        .unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
    let st = status_of(
        api.patch("d", &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 400, "{}", st.message);
}
