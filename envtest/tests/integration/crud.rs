//! Acceptance checks 1–9: create/get/update semantics over HTTP with kube
//! (`k8s.io/apiserver/pkg/endpoints/handlers/{create,get,update}.go`).

use crate::common;

use std::collections::BTreeMap;

use common::{cm, status_of};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

#[tokio::test]
async fn create_returns_uid_timestamp_and_increasing_rv() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = api
        .create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .unwrap();
    let b = api
        .create(&PostParams::default(), &cm("b", &[("k", "v")]))
        .await
        .unwrap();
    let uid = a.metadata.uid.clone().unwrap();
    assert!(uuid_like(&uid), "uid {uid}");
    let ts = serde_json::to_value(&a.metadata.creation_timestamp).unwrap();
    let ts = ts.as_str().unwrap();
    assert_eq!(ts.len(), 20, "{ts}");
    assert!(ts.ends_with('Z'));
    let rv_a: u64 = a
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    let rv_b: u64 = b
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv_b > rv_a);
    let got = api.get("a").await.unwrap();
    assert_eq!(got, a);

    // raw: 201 on create
    let (code, _) = common::raw(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#),
        "application/json",
    )
    .await;
    assert_eq!(code, 201);
}

fn uuid_like(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[tokio::test]
async fn create_existing_name_is_already_exists() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let first = api
        .create(&PostParams::default(), &cm("x", &[("k", "1")]))
        .await
        .unwrap();
    let err = api
        .create(&PostParams::default(), &cm("x", &[("k", "2")]))
        .await
        .unwrap_err();
    let st = status_of(err);
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "AlreadyExists");
    assert_eq!(st.message, r#"configmaps "x" already exists"#);
    let d = st.details.unwrap();
    assert_eq!(d.name, "x");
    assert_eq!(d.kind, "configmaps");
    assert_eq!(api.get("x").await.unwrap(), first);
}

#[tokio::test]
async fn get_missing_is_not_found() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let st = status_of(api.get("nope").await.unwrap_err());
    assert_eq!(st.code, 404);
    assert_eq!(st.reason, "NotFound");
    assert_eq!(st.message, r#"configmaps "nope" not found"#);
    let d = st.details.unwrap();
    assert_eq!((d.name.as_str(), d.kind.as_str()), ("nope", "configmaps"));
    assert!(api.get_opt("nope").await.unwrap().is_none());
}

#[tokio::test]
async fn stale_update_conflicts_and_one_of_twenty_wins() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let base = api
        .create(&PostParams::default(), &cm("c", &[("n", "0")]))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let api = api.clone();
        let mut obj = base.clone();
        obj.data = Some(BTreeMap::from([("n".to_string(), (i + 1).to_string())]));
        tasks.push(tokio::spawn(async move {
            api.replace("c", &PostParams::default(), &obj).await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                let st = status_of(e);
                assert_eq!(st.code, 409);
                assert_eq!(st.reason, "Conflict");
                assert!(st.message.contains("the object has been modified; please apply your changes to the latest version and try again"), "{}", st.message);
            }
        }
    }
    assert_eq!(ok, 1);
}

/// Concurrent patches of one object each apply to the object as the write before left it (a
/// patch is made outside the store lock from the object as read, and committed only if no write
/// came in between, else made again from a new read): no patch is lost, and each write has a
/// resourceVersion of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_of_one_object_lose_none() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // Large enough that parsing it takes a while, so writes come in between.
    let keys: Vec<(String, String)> = (0..2_000)
        .map(|i| (format!("base{i}"), "x".repeat(64)))
        .collect();
    let mut base = cm("p", &[]);
    base.data = Some(keys.into_iter().collect());
    api.create(&PostParams::default(), &base).await.unwrap();
    let rvs: Vec<String> = futures::stream::iter(0..64)
        .map(|i| {
            let api = api.clone();
            async move {
                let p = Patch::Merge(serde_json::json!({"data": {format!("k{i}"): "v"}}));
                let out = api.patch("p", &PatchParams::default(), &p).await;
                out.unwrap().metadata.resource_version.unwrap()
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let data = api.get("p").await.unwrap().data.unwrap_or_default();
    let patched = data.keys().filter(|k| k.starts_with('k')).count();
    assert_eq!(
        patched,
        64,
        "{:?}",
        data.keys()
            .filter(|k| k.starts_with('k'))
            .collect::<Vec<_>>()
    );
    let distinct: std::collections::BTreeSet<&String> = rvs.iter().collect();
    assert_eq!(distinct.len(), 64, "{rvs:?}");
}

#[tokio::test]
async fn put_without_rv_ok_for_configmap() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("u", &[("a", "1")]))
        .await
        .unwrap();
    let out = api
        .replace("u", &PostParams::default(), &cm("u", &[("a", "2")]))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["a"], "2");
}

#[tokio::test]
async fn noop_put_and_patch_keep_rv() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = api
        .create(&PostParams::default(), &cm("n", &[("a", "1")]))
        .await
        .unwrap();
    let rv = a.metadata.resource_version.clone().unwrap();
    let wp = kube::api::WatchParams::default()
        .timeout(10)
        .disable_bookmarks();
    let mut events = api.watch(&wp, &rv).await.unwrap().boxed();
    let b = api.replace("n", &PostParams::default(), &a).await.unwrap();
    assert_eq!(a.metadata.resource_version, b.metadata.resource_version);
    let p = serde_json::json!({"data": {"a": "1"}});
    let c = api
        .patch("n", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    assert_eq!(a.metadata.resource_version, c.metadata.resource_version);
    // No event for the no-ops: the first event is the real change that follows.
    let p = serde_json::json!({"data": {"a": "2"}});
    let d = api
        .patch("n", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    match events.next().await.unwrap().unwrap() {
        kube::api::WatchEvent::Modified(o) => {
            assert_eq!(o.metadata.resource_version, d.metadata.resource_version)
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// uid, creationTimestamp and generation are the stored ones whatever an update sends: left
/// out, the same, or changed (upstream's `ObjectMetaUpdateValidation` resets them), and a write
/// that changes nothing else is a no-op (same resourceVersion).
#[tokio::test]
async fn updates_keep_the_stored_identity_fields() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = api
        .create(&PostParams::default(), &cm("k", &[("a", "1")]))
        .await
        .unwrap();
    let same = |o: &ConfigMap, what: &str| {
        assert_eq!(o.metadata.uid, a.metadata.uid, "{what}");
        assert_eq!(
            o.metadata.creation_timestamp, a.metadata.creation_timestamp,
            "{what}"
        );
        assert_eq!(o.metadata.generation, a.metadata.generation, "{what}");
    };
    let mut bare = a.clone();
    bare.metadata.uid = None;
    bare.metadata.creation_timestamp = None;
    let b = api
        .replace("k", &PostParams::default(), &bare)
        .await
        .unwrap();
    same(&b, "left out");
    assert_eq!(b.metadata.resource_version, a.metadata.resource_version);
    let p = serde_json::json!({"metadata": {"creationTimestamp": "2001-01-01T00:00:00Z",
        "generation": 7}, "data": {"a": "2"}});
    let c = api
        .patch("k", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    same(&c, "changed");
    assert_ne!(c.metadata.resource_version, a.metadata.resource_version);
    same(&api.get("k").await.unwrap(), "stored");
}

#[tokio::test]
async fn namespace_mismatch_and_defaulting() {
    let env = common::env().await;
    let mut obj = cm("m", &[]);
    obj.metadata.namespace = Some("a".into());
    let body = serde_json::to_string(&obj).unwrap();
    let (code, v) = common::raw(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&body),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["reason"], "BadRequest");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let made = api
        .create(&PostParams::default(), &cm("m", &[]))
        .await
        .unwrap();
    assert_eq!(made.metadata.namespace.as_deref(), Some("default"));
}

#[tokio::test]
async fn missing_and_terminating_namespaces() {
    // Without namespace finalization (envtest parity) the deleted namespace stays Terminating.
    let env = ctrl_envtest::Environment::builder()
        .controllers(false)
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "nowhere");
    let st = status_of(
        api.create(&PostParams::default(), &cm("x", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 404);
    assert_eq!(st.message, r#"namespaces "nowhere" not found"#);

    let nss: Api<Namespace> = Api::all(env.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("doomed".into());
    nss.create(&PostParams::default(), &ns).await.unwrap();
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let got = nss.get("doomed").await.unwrap();
    assert_eq!(got.status.unwrap().phase.as_deref(), Some("Terminating"));
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "doomed");
    let st = status_of(
        api.create(&PostParams::default(), &cm("x", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 403);
    assert_eq!(st.reason, "Forbidden");
}

#[tokio::test]
async fn generate_name_suffix() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut obj = cm("", &[]);
    obj.metadata.name = None;
    obj.metadata.generate_name = Some("job-".into());
    let made = api.create(&PostParams::default(), &obj).await.unwrap();
    let name = made.metadata.name.unwrap();
    assert_eq!(name.len(), 9, "{name}");
    assert!(name.starts_with("job-"));
    assert!(
        name[4..]
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
        "{name}"
    );
}

/// A CRD whose schema is not structural is rejected (422) with the apiextensions server's
/// field paths, and nothing is registered; the same CRD with types is accepted.
#[tokio::test]
async fn non_structural_crd_schemas_are_invalid() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let env = common::env().await;
    let api: Api<CustomResourceDefinition> = Api::all(env.client());
    let mut crd = common::widget_crd(false);
    let schema = serde_json::json!({"type": "object", "properties": {
        "spec": {"properties": {"size": {"type": "integer"}}},
        "tags": {"type": "array"},
    }});
    crd.spec.versions[0].schema =
        Some(serde_json::from_value(serde_json::json!({ "openAPIV3Schema": schema })).unwrap());
    let st = status_of(api.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(st.code, 422, "{}", st.message);
    let fields: Vec<String> = st
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert!(
        fields
            .contains(&"spec.versions[0].schema.openAPIV3Schema.properties[spec].type".to_string()),
        "{fields:?}"
    );
    assert!(
        fields.contains(
            &"spec.versions[0].schema.openAPIV3Schema.properties[tags].items".to_string()
        ),
        "{fields:?}"
    );
    assert!(api.get_opt("widgets.example.com").await.unwrap().is_none());
    api.create(&PostParams::default(), &common::widget_crd(false))
        .await
        .unwrap();
}
