//! Acceptance checks 12–13 (merge and JSON patch, kube's finalizer helper) and 18–19 (deletion
//! with finalizers, delete preconditions).

use crate::common;

use std::sync::Arc;

use common::{cm, status_of};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;

#[tokio::test]
async fn merge_patch_null_removes_key() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("m", &[("a", "1")]))
        .await
        .unwrap();
    let out = api
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null, "b": "2"}})),
        )
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert!(!data.contains_key("a"));
    assert_eq!(data["b"], "2");
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

#[tokio::test]
async fn finalizer_helper_adds_and_removes() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let obj = api
        .create(&PostParams::default(), &cm("f", &[]))
        .await
        .unwrap();
    // Apply: the helper adds its finalizer (test /metadata/finalizers == null on a missing path).
    finalizer(&api, "example.com/cleanup", Arc::new(obj), |_ev| async {
        Ok::<_, Never>(Action::await_change())
    })
    .await
    .unwrap();
    let obj = api.get("f").await.unwrap();
    assert_eq!(
        obj.metadata.finalizers.clone().unwrap(),
        ["example.com/cleanup"]
    );
    let obj = api.get("f").await.unwrap();
    finalizer(
        &api,
        "example.com/cleanup",
        Arc::new(obj),
        |ev| async move {
            assert!(matches!(ev, Event::Apply(_)));
            Ok::<_, Never>(Action::await_change())
        },
    )
    .await
    .unwrap();
    // Delete marks it; the helper's cleanup removes the finalizer and the object goes away.
    api.delete("f", &DeleteParams::default()).await.unwrap();
    let obj = api.get("f").await.unwrap();
    assert!(obj.metadata.deletion_timestamp.is_some());
    finalizer(
        &api,
        "example.com/cleanup",
        Arc::new(obj),
        |ev| async move {
            assert!(matches!(ev, Event::Cleanup(_)));
            Ok::<_, Never>(Action::await_change())
        },
    )
    .await
    .unwrap();
    assert!(api.get_opt("f").await.unwrap().is_none());

    // Without deletion: the finalizers field disappears when emptied.
    let mut o = cm("g", &[]);
    o.metadata.finalizers = Some(vec!["x/y".into()]);
    api.create(&PostParams::default(), &o).await.unwrap();
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers/0"}]))
            .unwrap();
    let out = api
        .patch("g", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .unwrap();
    assert!(out.metadata.finalizers.is_none());
    let (_, raw) = common::raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps/g",
        None,
        "application/json",
    )
    .await;
    assert!(raw["metadata"].get("finalizers").is_none(), "{raw}");
}

#[tokio::test]
async fn failing_json_patch_test_is_invalid_and_changes_nothing() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let before = api
        .create(&PostParams::default(), &cm("j", &[("a", "1")]))
        .await
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/data/a", "value": "1"},
    ]))
    .unwrap();
    let st = status_of(
        api.patch("j", &PatchParams::default(), &Patch::<()>::Json(patch))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 422);
    assert_eq!(st.reason, "Invalid");
    assert_eq!(api.get("j").await.unwrap(), before);
}

#[tokio::test]
async fn delete_with_finalizer_marks_then_last_removal_deletes() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut o = cm("d", &[]);
    o.metadata.finalizers = Some(vec!["a/b".into()]);
    let made = api.create(&PostParams::default(), &o).await.unwrap();
    let rv = made.metadata.resource_version.clone().unwrap();
    let mut w = api
        .watch(&WatchParams::default().timeout(10).disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();

    let (code, body) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/d",
        Some("{}"),
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "ConfigMap");
    assert!(body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(
        api.get("d")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    match w.next().await.unwrap().unwrap() {
        WatchEvent::Modified(o) => assert!(o.metadata.deletion_timestamp.is_some()),
        other => panic!("unexpected {other:?}"),
    }
    // no new finalizers now
    let st = status_of(
        api.patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["a/b", "c/d"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 422);
    // removing the last one deletes it
    let last = api
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(api.get_opt("d").await.unwrap().is_none());
    match w.next().await.unwrap().unwrap() {
        WatchEvent::Deleted(o) => {
            assert_eq!(o.metadata.resource_version, last.metadata.resource_version)
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn delete_generation_bump_for_tracking_kinds() {
    let env = common::env().await;
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(env.client(), "default");
    let d: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
        "metadata": {"name": "dep", "finalizers": ["x/y"]},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap();
    let made = api.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(made.metadata.generation, Some(1));
    api.delete("dep", &DeleteParams::default()).await.unwrap();
    assert_eq!(api.get("dep").await.unwrap().metadata.generation, Some(2));
}

#[tokio::test]
async fn delete_uid_precondition_mismatch_conflicts() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("p", &[]))
        .await
        .unwrap();
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let st = status_of(api.delete("p", &dp).await.unwrap_err());
    assert_eq!(st.code, 409);
    assert!(
        st.message
            .starts_with("Precondition failed: UID in precondition: not-the-uid"),
        "{}",
        st.message
    );
    assert!(api.get_opt("p").await.unwrap().is_some());
    // the right uid deletes, answering a Success Status
    let uid = api.get("p").await.unwrap().metadata.uid;
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..Default::default()
    };
    assert!(api.delete("p", &dp).await.unwrap().is_right());
}
