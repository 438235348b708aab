//! The controllers run as write observers of the registry (issue 16): their follow-up writes are
//! queued, not nested, so an owner chain of any depth is collected, an ownership cycle
//! settles, and all of it is done before the client's delete returns — the next read sees it,
//! with no waiting.

use crate::common;

use common::cm;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn owner_ref(owner: &ConfigMap) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        ..Default::default()
    }
}

/// A labelled ConfigMap owned by `owner` (if any).
async fn make(api: &Api<ConfigMap>, name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.labels = Some([("chain".to_string(), "x".to_string())].into());
    c.metadata.owner_references = owner.map(|o| vec![owner_ref(o)]);
    api.create(&PostParams::default(), &c).await.unwrap()
}

async fn left(api: &Api<ConfigMap>) -> Vec<String> {
    api.list(&ListParams::default().labels("chain=x"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect()
}

#[tokio::test]
async fn a_deep_owner_chain_is_collected_before_the_delete_returns() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // Deeper than any recursion bound a nested implementation would need.
    let mut prev = make(&api, "link-0", None).await;
    for i in 1..80 {
        prev = make(&api, &format!("link-{i}"), Some(&prev)).await;
    }
    assert_eq!(left(&api).await.len(), 80);
    api.delete("link-0", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(left(&api).await, Vec::<String>::new());
}

#[tokio::test]
async fn an_ownership_cycle_settles() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (policy, a, b) in [
        (DeleteParams::background(), "a1", "b1"),
        (DeleteParams::foreground(), "a2", "b2"),
    ] {
        let first = make(&api, a, None).await;
        let second = make(&api, b, Some(&first)).await;
        let refs = json!({"metadata": {"ownerReferences": [owner_ref(&second)]}});
        api.patch(a, &PatchParams::default(), &Patch::Merge(&refs))
            .await
            .unwrap();
        api.delete(a, &policy).await.unwrap();
        assert!(api.get_opt(a).await.unwrap().is_none(), "{a} is gone");
        assert!(api.get_opt(b).await.unwrap().is_none(), "{b} is gone");
    }
    assert_eq!(left(&api).await, Vec::<String>::new());
}
