//! Acceptance check 21: namespace lifecycle — Terminating, contents deleted (finalizers
//! honoured), then gone; with `controllers(false)` it stays Terminating like envtest.

use crate::common;

use std::time::Duration;

use common::{cm, status_of};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn ns(name: &str) -> Namespace {
    let mut n = Namespace::default();
    n.metadata.name = Some(name.into());
    n
}

async fn phase(api: &Api<Namespace>, name: &str) -> Option<String> {
    api.get_opt(name)
        .await
        .unwrap()
        .map(|n| n.status.and_then(|s| s.phase).unwrap_or_default())
}

#[tokio::test]
async fn terminating_then_contents_deleted_then_gone() {
    let env = common::env().await;
    let nss: Api<Namespace> = Api::all(env.client());
    nss.create(&PostParams::default(), &ns("team"))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "team");
    cms.create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    nss.delete("team", &DeleteParams::default()).await.unwrap();
    assert_eq!(phase(&nss, "team").await.as_deref(), Some("Terminating"));
    assert!(
        cms.get_opt("plain").await.unwrap().is_none(),
        "contents are deleted"
    );
    let h = cms.get("held").await.unwrap();
    assert!(
        h.metadata.deletion_timestamp.is_some(),
        "finalizers are honoured"
    );
    // New content is refused while terminating.
    let st = status_of(
        cms.create(&PostParams::default(), &cm("new", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 403);
    // Releasing the last finalizer empties the namespace, which then goes away.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    for _ in 0..100 {
        if nss.get_opt("team").await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the namespace never went away");
}

#[tokio::test]
async fn switched_off_stays_terminating() {
    let env = ctrl_envtest::Environment::builder()
        .controllers(false)
        .start()
        .await
        .unwrap();
    let nss: Api<Namespace> = Api::all(env.client());
    nss.create(&PostParams::default(), &ns("team"))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "team");
    cms.create(&PostParams::default(), &cm("plain", &[]))
        .await
        .unwrap();
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(phase(&nss, "team").await.as_deref(), Some("Terminating"));
    assert!(
        cms.get_opt("plain").await.unwrap().is_some(),
        "nothing deletes the contents"
    );
}
