//! Acceptance check 20: the garbage collector follows ownerReferences (Background, Orphan,
//! Foreground with blockOwnerDeletion), and is off with `controllers(false)`.

use crate::common;

use std::time::Duration;

use common::cm;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn owner_ref(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

async fn child(
    api: &Api<ConfigMap>,
    name: &str,
    owners: Vec<OwnerReference>,
    fins: &[&str],
) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.owner_references = Some(owners);
    if !fins.is_empty() {
        c.metadata.finalizers = Some(fins.iter().map(|f| f.to_string()).collect());
    }
    api.create(&PostParams::default(), &c).await.unwrap()
}

/// Polls until `f` holds (GC work is prompt but tests do not rely on timing).
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

async fn gone(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.unwrap().is_none()
}

#[tokio::test]
async fn background_deletes_sole_dependents_and_trims_shared_ones() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .unwrap();
    let other = api
        .create(&PostParams::default(), &cm("other", &[]))
        .await
        .unwrap();
    child(&api, "only", vec![owner_ref(&owner, false)], &[]).await;
    child(
        &api,
        "shared",
        vec![owner_ref(&owner, false), owner_ref(&other, false)],
        &[],
    )
    .await;
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the sole dependent is deleted", || gone(&api, "only")).await;
    let shared = api.get("shared").await.unwrap();
    let refs = shared.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1, "only the dangling reference is removed");
    assert_eq!(refs[0].name, "other");
}

#[tokio::test]
async fn orphan_keeps_dependents_without_the_reference() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .unwrap();
    child(&api, "dep", vec![owner_ref(&owner, true)], &[]).await;
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    eventually("the owner goes once orphaning is done", || {
        gone(&api, "owner")
    })
    .await;
    let dep = api.get("dep").await.unwrap();
    assert!(
        dep.metadata.owner_references.is_none(),
        "{:?}",
        dep.metadata.owner_references
    );
}

#[tokio::test]
async fn foreground_waits_for_blocking_dependents() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .unwrap();
    child(
        &api,
        "blocker",
        vec![owner_ref(&owner, true)],
        &["example.com/hold"],
    )
    .await;
    child(&api, "plain", vec![owner_ref(&owner, false)], &[]).await;
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually("the non-blocking dependent is deleted", || {
        gone(&api, "plain")
    })
    .await;
    let held = api.get("owner").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(
        held.metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    let blocker = api.get("blocker").await.unwrap();
    assert!(
        blocker.metadata.deletion_timestamp.is_some(),
        "the blocker is being deleted"
    );
    // Releasing the blocker lets the owner go.
    api.patch(
        "blocker",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the owner goes after its blocking dependent", || {
        gone(&api, "owner")
    })
    .await;
}

#[tokio::test]
async fn switched_off_like_envtest() {
    let env = ctrl_envtest::Environment::builder()
        .controllers(false)
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .unwrap();
    child(&api, "dep", vec![owner_ref(&owner, false)], &[]).await;
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    let o2 = api
        .create(&PostParams::default(), &cm("o2", &[]))
        .await
        .unwrap();
    child(&api, "dep2", vec![owner_ref(&o2, false)], &[]).await;
    api.delete("o2", &DeleteParams::orphan()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        api.get_opt("dep").await.unwrap().is_some(),
        "no GC: the dependent stays"
    );
    let held = api.get("o2").await.unwrap();
    assert_eq!(
        held.metadata.finalizers.unwrap(),
        ["orphan"],
        "the orphan finalizer stays"
    );
}
