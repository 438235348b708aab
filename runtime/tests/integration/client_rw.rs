//! The client against ctrl-envtest: cached reads that catch up with writes, every
//! write verb, the status subresource, the uncached reader, and errors that say what
//! and where (ported from controller-runtime's `pkg/client/client_test.go`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, ListOptions, Options, Reader};
use ctrl_runtime::client::{
    Client, DeleteParams, ObjectWriter, Patch, PatchParams, Preconditions, PropagationPolicy,
    ignore_already_exists, ignore_not_found,
};
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServicePort, ServiceSpec};
use kube::api::{ListParams, ObjectMeta};
use tokio_util::sync::CancellationToken;

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

async fn setup() -> (Environment, Client, CancellationToken) {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let client = Client::new(env.client(), cache.clone()).with_field_owner("ctrl-test");
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    (env, client, ctx)
}

/// Reads through the cache until `check` holds (the cache lags writes by one watch
/// event), returning the object.
async fn read_until(
    client: &Client,
    name: &str,
    check: impl Fn(Option<&ConfigMap>) -> bool,
) -> Option<Arc<ConfigMap>> {
    for _ in 0..500 {
        let got =
            ignore_not_found(client.get::<ConfigMap>("default", name).await).expect("cached read");
        if check(got.as_deref()) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the cache never caught up on {name}");
}

fn rv(c: &ConfigMap) -> String {
    c.metadata.resource_version.clone().unwrap_or_default()
}

#[tokio::test]
async fn the_client_reads_its_own_writes_once_the_cache_catches_up() {
    let (_env, client, ctx) = setup().await;
    let created = client.create(&cm("own", &[])).await.expect("create");
    let seen = read_until(&client, "own", |c| c.is_some_and(|c| rv(c) == rv(&created))).await;
    assert_eq!(seen.map(|c| rv(&c)), Some(rv(&created)));

    let mut next = created.clone();
    next.data = Some(BTreeMap::from([("k".to_string(), "v2".to_string())]));
    let updated = client.update(&next).await.expect("update");
    assert_ne!(rv(&updated), rv(&created));
    read_until(&client, "own", |c| c.is_some_and(|c| rv(c) == rv(&updated))).await;

    client
        .delete(&updated, &DeleteParams::default())
        .await
        .expect("delete");
    read_until(&client, "own", |c| c.is_none()).await;
    ctx.cancel();
}

#[tokio::test]
async fn stale_updates_conflict_and_duplicates_already_exist() {
    let (_env, client, ctx) = setup().await;
    let created = client.create(&cm("race", &[])).await.expect("create");
    let err = client
        .create(&cm("race", &[]))
        .await
        .expect_err("duplicate");
    assert!(err.is_already_exists(), "{err}");
    assert_eq!(
        ignore_already_exists(client.create(&cm("race", &[])).await).expect("ignored"),
        None
    );
    let mut a = created.clone();
    a.data = Some(BTreeMap::from([("who".to_string(), "a".to_string())]));
    client.update(&a).await.expect("first update");
    let mut b = created.clone();
    b.data = Some(BTreeMap::from([("who".to_string(), "b".to_string())]));
    let err = client.update(&b).await.expect_err("stale update");
    assert!(err.is_conflict(), "{err}");
    assert_eq!(err.code(), Some(409));
    let msg = err.to_string();
    assert!(
        msg.starts_with("update v1/ConfigMap default/race: "),
        "{msg}"
    );
    ctx.cancel();
}

#[tokio::test]
async fn patches_merge_json_strategic_and_apply() {
    let (_env, client, ctx) = setup().await;
    let obj = client.create(&cm("p", &[])).await.expect("create");
    let merge = serde_json::json!({"data": {"merged": "yes"}});
    let got = client
        .patch(&obj, &Patch::Merge(&merge), PatchParams::default())
        .await
        .expect("merge patch");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("merged"))
            .map(String::as_str),
        Some("yes")
    );

    let ops: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "add", "path": "/data/json", "value": "yes"}
    ]))
    .expect("json patch");
    let got = client
        .patch(&obj, &Patch::<()>::Json(ops), PatchParams::default())
        .await
        .expect("json patch");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("json"))
            .map(String::as_str),
        Some("yes")
    );

    // A JSON patch whose test fails is rejected and changes nothing.
    let bad: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "test", "path": "/data/json", "value": "no"},
        {"op": "add", "path": "/data/bad", "value": "1"}
    ]))
    .expect("json patch");
    let err = client
        .patch(&obj, &Patch::<()>::Json(bad), PatchParams::default())
        .await
        .expect_err("failed test op");
    assert!(
        err.to_string().contains("patch v1/ConfigMap default/p"),
        "{err}"
    );

    let strategic = serde_json::json!({"data": {"strategic": "yes"}});
    let merged = client
        .patch(&obj, &Patch::Strategic(&strategic), PatchParams::default())
        .await
        .expect("strategic merge patch");
    let data = merged.data.clone().unwrap_or_default();
    assert_eq!(data.get("strategic").map(String::as_str), Some("yes"));
    assert!(
        data.len() > 1,
        "strategic merge keeps the other keys: {data:?}"
    );

    let mut applied = cm("p", &[]);
    applied.data = Some(BTreeMap::from([("applied".to_string(), "yes".to_string())]));
    applied.metadata.resource_version = None;
    let after_apply = client
        .apply(&applied, Some("applier"), true)
        .await
        .expect("server-side apply");
    let data = after_apply.data.clone().unwrap_or_default();
    assert_eq!(data.get("applied").map(String::as_str), Some("yes"));
    let managers: Vec<_> = after_apply
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(managers.iter().any(|m| m == "applier"), "{managers:?}");
    ctx.cancel();
}

#[tokio::test]
async fn deletes_honour_preconditions_propagation_and_selectors() {
    let (_env, client, ctx) = setup().await;
    let obj = client.create(&cm("d", &[])).await.expect("create");
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = client.delete(&obj, &wrong).await.expect_err("wrong uid");
    assert!(err.is_conflict(), "{err}");
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: obj.metadata.uid.clone(),
            resource_version: obj.metadata.resource_version.clone(),
        }),
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    client.delete(&obj, &right).await.expect("delete");
    // Foreground deletion leaves the object, marked, for the garbage collector (envtest
    // runs none); otherwise it is gone at once.
    if let Ok(left) = client.api_reader().get::<ConfigMap>("default", "d").await {
        assert!(left.metadata.deletion_timestamp.is_some());
    }
    let other = client.create(&cm("d2", &[])).await.expect("create");
    client
        .delete(&other, &DeleteParams::background())
        .await
        .expect("delete");
    let err = client
        .delete(&other, &DeleteParams::default())
        .await
        .expect_err("gone");
    assert!(err.is_not_found(), "{err}");
    assert_eq!(ignore_not_found(Err::<(), _>(err)).expect("ignored"), None);

    for (n, l) in [("x1", "x"), ("x2", "x"), ("y1", "y")] {
        client
            .create(&cm(n, &[("group", l)]))
            .await
            .expect("create");
    }
    client
        .delete_all_of::<ConfigMap>(
            Some("default"),
            &ListParams::default().labels("group=x"),
            &DeleteParams::background(),
        )
        .await
        .expect("delete all of");
    let left = client
        .api_reader()
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("uncached list");
    let names: Vec<_> = left
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert!(names.contains(&"y1".to_string()));
    assert!(!names.iter().any(|n| n.starts_with('x')), "{names:?}");
    ctx.cancel();
}

#[tokio::test]
async fn the_uncached_reader_sees_writes_at_once_and_errors_name_the_object() {
    let (_env, client, ctx) = setup().await;
    let created = client.create(&cm("fresh", &[])).await.expect("create");
    let direct = client
        .api_reader()
        .get::<ConfigMap>("default", "fresh")
        .await
        .expect("uncached get");
    assert_eq!(rv(&direct), rv(&created));
    let err = client
        .api_reader()
        .get::<ConfigMap>("default", "absent")
        .await
        .expect_err("absent");
    assert!(err.is_not_found());
    assert!(
        err.to_string()
            .starts_with("get v1/ConfigMap default/absent: "),
        "{err}"
    );
    let err = client
        .get::<ConfigMap>("default", "absent")
        .await
        .expect_err("absent in cache");
    assert!(err.is_not_found());
    assert!(err.to_string().contains("default/absent"), "{err}");
    let listed = client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("cached list");
    assert!(listed.len() <= 1);
    ctx.cancel();
}

#[tokio::test]
async fn status_writes_go_to_the_subresource() {
    let (_env, client, ctx) = setup().await;
    let svc = Service {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("web".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 80,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let created = client.create(&svc).await.expect("create service");
    let mut with_status = created.clone();
    let lb = serde_json::json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}});
    with_status.status = Some(serde_json::from_value(lb.clone()).expect("status"));
    // The status write ignores spec changes.
    if let Some(s) = with_status.spec.as_mut() {
        s.ports = Some(vec![ServicePort {
            port: 81,
            ..Default::default()
        }]);
    }
    let updated = client
        .status()
        .update(&with_status)
        .await
        .expect("status update");
    let ip = |s: &Service| {
        s.status
            .as_ref()
            .and_then(|st| st.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .and_then(|i| i.first())
            .and_then(|i| i.ip.clone())
    };
    assert_eq!(ip(&updated).as_deref(), Some("10.0.0.1"));
    let port = updated
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|p| p[0].port);
    assert_eq!(port, Some(80), "status update must not change spec");

    let patch = serde_json::json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}]}}});
    let patched = client
        .status()
        .patch(&updated, &Patch::Merge(&patch), PatchParams::default())
        .await
        .expect("status patch");
    assert_eq!(ip(&patched).as_deref(), Some("10.0.0.2"));
    let mut status_only = patched.clone();
    status_only.metadata.managed_fields = None;
    status_only.metadata.resource_version = None;
    let applied = client
        .status()
        .apply(&status_only, Some("applier"), true)
        .await
        .expect("status apply");
    assert_eq!(ip(&applied).as_deref(), Some("10.0.0.2"));
    ctx.cancel();
}
