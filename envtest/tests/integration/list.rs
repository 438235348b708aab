//! Acceptance checks 22 (selectors) and 23 (pagination with one consistent snapshot).

use crate::common;

use common::{cm, status_of};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

fn labelled(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    c
}

#[tokio::test]
async fn label_and_field_selectors() {
    let env = common::env().await;
    let client = env.client();
    for ns in ["b-ns", "a-ns"] {
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let mut n = k8s_openapi::api::core::v1::Namespace::default();
        n.metadata.name = Some(ns.into());
        nss.create(&PostParams::default(), &n).await.unwrap();
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for (name, labels) in [
            ("z", vec![("app", "a")]),
            ("x", vec![("app", "b")]),
            ("y", vec![("app", "b"), ("legacy", "1")]),
            ("w", vec![("app", "c")]),
            ("v", vec![]),
            ("u", vec![("app", "a")]),
        ] {
            api.create(&PostParams::default(), &labelled(name, &labels))
                .await
                .unwrap();
        }
    }
    let all: Api<ConfigMap> = Api::all(client.clone());
    let lp = ListParams::default()
        .labels("app in (a,b),!legacy")
        .fields("metadata.name!=x");
    let got: Vec<(String, String)> = all
        .list(&lp)
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| (o.namespace().unwrap(), o.name_any()))
        .collect();
    let want: Vec<(String, String)> = [("a-ns", "u"), ("a-ns", "z"), ("b-ns", "u"), ("b-ns", "z")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);

    let st = status_of(
        all.list(&ListParams::default().fields("spec.foo=bar"))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 400);
    assert_eq!(st.reason, "BadRequest");
    let st = status_of(
        all.list(&ListParams::default().labels("app in (a"))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 400);
}

#[tokio::test]
async fn pagination_is_one_consistent_snapshot() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), &[]))
            .await
            .unwrap();
    }
    let p1 = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(p1.items.len(), 2);
    let rv = p1.metadata.resource_version.clone();
    // changes after page 1 do not show
    api.create(&PostParams::default(), &cm("cm-9", &[]))
        .await
        .unwrap();
    api.delete("cm-3", &Default::default()).await.unwrap();
    let t1 = p1.metadata.continue_.clone().unwrap();
    let p2 = api
        .list(&ListParams::default().limit(2).continue_token(&t1))
        .await
        .unwrap();
    assert_eq!(p2.items.len(), 2);
    assert_eq!(p2.metadata.resource_version, rv);
    let t2 = p2.metadata.continue_.clone().unwrap();
    let p3 = api
        .list(&ListParams::default().limit(2).continue_token(&t2))
        .await
        .unwrap();
    assert_eq!(p3.items.len(), 1);
    assert_eq!(p3.metadata.resource_version, rv);
    assert!(p3.metadata.continue_.as_deref().is_none_or(str::is_empty));
    let names: Vec<String> = p1
        .items
        .iter()
        .chain(&p2.items)
        .chain(&p3.items)
        .map(|o| o.name_any())
        .collect();
    assert_eq!(names, ["cm-0", "cm-1", "cm-2", "cm-3", "cm-4"]);

    let st = status_of(
        api.list(&ListParams::default().limit(2).continue_token("garbage!"))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 400);

    env.faults().compact_history();
    let st = status_of(
        api.list(&ListParams::default().limit(2).continue_token(&t1))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 410);
    assert_eq!(st.reason, "Expired");
}

#[tokio::test]
async fn empty_list_has_items_array_and_rv() {
    let env = common::env().await;
    let (code, v) = common::raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/secrets",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(v["items"], serde_json::json!([]));
    assert_eq!(v["kind"], "SecretList");
    assert!(
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
}
