//! Field indexes and list options on the cache, against ctrl-envtest: queries follow
//! label changes, controller-runtime's `field:<name>` / `<namespace>/<value>` naming,
//! and the errors for unknown or duplicate indexes (ported from controller-runtime's
//! `cache_test.go` "should be able to index an object field" cases).

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{self, Cache, ListOptions, Options, Reader};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{Expression, Selector};
use support::until;
use tokio_util::sync::CancellationToken;

fn tier(c: &ConfigMap) -> Vec<String> {
    c.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("tier").cloned())
        .into_iter()
        .collect()
}

async fn setup() -> (Environment, Cache, CancellationToken) {
    let env = Environment::start().await.expect("envtest");
    let nss: Api<Namespace> = Api::all(env.client());
    for ns in ["east", "west"] {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.into());
        nss.create(&PostParams::default(), &n).await.expect("ns");
    }
    for (ns, name, t) in [
        ("east", "a", "web"),
        ("east", "b", "db"),
        ("west", "c", "web"),
        ("west", "d", "cache"),
    ] {
        let api: Api<ConfigMap> = Api::namespaced(env.client(), ns);
        let obj = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                labels: Some(BTreeMap::from([("tier".to_string(), t.to_string())])),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &obj)
            .await
            .expect("create");
    }
    let cache = Cache::new(env.client(), Options::default());
    cache
        .index_field::<ConfigMap>("metadata.labels.tier", tier)
        .expect("index");
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    (env, cache, ctx)
}

async fn names(cache: &Cache, opts: ListOptions) -> Vec<String> {
    cache
        .list::<ConfigMap>(&opts)
        .await
        .expect("list")
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

#[tokio::test]
async fn index_queries_follow_label_changes() {
    let (env, cache, ctx) = setup().await;
    let web = || ListOptions::new().matching_field("metadata.labels.tier", "web");
    assert_eq!(names(&cache, web()).await, ["a", "c"]);
    assert_eq!(names(&cache, web().in_namespace("west")).await, ["c"]);

    // Relabel a: web -> db. The index moves it once the watch event lands.
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "east");
    let patch = serde_json::json!({"metadata": {"labels": {"tier": "db"}}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let relabelled = || async { names(&cache, web()).await == ["c"] };
    until("the index follows the relabel", relabelled).await;
    let db = ListOptions::new()
        .matching_field("metadata.labels.tier", "db")
        .in_namespace("east");
    assert_eq!(names(&cache, db).await, ["a", "b"]);

    // Dropping the label removes it from the index.
    let patch = serde_json::json!({"metadata": {"labels": {"tier": null}}});
    api.patch("b", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let db = || ListOptions::new().matching_field("metadata.labels.tier", "db");
    let unlabelled = || async { names(&cache, db()).await == ["a"] };
    until("the index drops the unlabelled", unlabelled).await;
    ctx.cancel();
}

#[tokio::test]
async fn index_names_follow_controller_runtime_conventions() {
    let (_env, cache, ctx) = setup().await;
    let inf = cache.get_informer::<ConfigMap>();
    let all = inf
        .store()
        .by_index("field:metadata.labels.tier", "__all_namespaces/web")
        .expect("index exists");
    assert_eq!(all.len(), 2);
    let east = inf
        .store()
        .by_index("field:metadata.labels.tier", "east/web")
        .expect("index exists");
    assert_eq!(east.len(), 1);
    assert_eq!(
        cache::namespaced_value(Some("east"), "web"),
        "east/web".to_string()
    );
    ctx.cancel();
}

#[tokio::test]
async fn indexes_added_after_start_cover_existing_objects_and_duplicates_fail() {
    let (_env, cache, ctx) = setup().await;
    cache
        .index_field::<ConfigMap>("name-len", |c: &ConfigMap| {
            vec![
                c.metadata
                    .name
                    .as_deref()
                    .unwrap_or_default()
                    .len()
                    .to_string(),
            ]
        })
        .expect("late index");
    let one = ListOptions::new().matching_field("name-len", "1");
    assert_eq!(names(&cache, one).await.len(), 4);
    let dup = cache.index_field::<ConfigMap>("metadata.labels.tier", tier);
    assert!(matches!(dup, Err(cache::Error::IndexConflict { .. })));
    ctx.cancel();
}

#[tokio::test]
async fn unknown_fields_fail_and_labels_limits_and_metadata_fields_work() {
    let (_env, cache, ctx) = setup().await;
    let err = cache
        .list::<ConfigMap>(&ListOptions::new().matching_field("spec.nope", "x"))
        .await
        .expect_err("no index");
    assert!(matches!(err, cache::Error::IndexNotFound { .. }), "{err}");
    assert!(err.to_string().contains("field:spec.nope"), "{err}");

    let web: Selector = Expression::Equal("tier".into(), "web".into()).into();
    assert_eq!(
        names(&cache, ListOptions::new().matching_labels(web)).await,
        ["a", "c"]
    );
    let not_web: Selector = Expression::NotIn("tier".into(), ["web".to_string()].into()).into();
    assert_eq!(
        names(&cache, ListOptions::new().matching_labels(not_web)).await,
        ["b", "d"]
    );
    assert_eq!(
        names(
            &cache,
            ListOptions::new().matching_label_map([("tier", "db")])
        )
        .await,
        ["b"]
    );
    assert_eq!(
        names(&cache, ListOptions::new().limit(3)).await,
        ["a", "b", "c"]
    );
    let by_name = ListOptions::new().matching_field("metadata.name", "d");
    assert_eq!(names(&cache, by_name).await, ["d"]);
    assert_eq!(
        names(&cache, ListOptions::new().in_namespace("west")).await,
        ["c", "d"]
    );
    let got: Arc<ConfigMap> = cache.get("west", "d").await.expect("get");
    assert_eq!(got.metadata.namespace.as_deref(), Some("west"));
    ctx.cancel();
}

#[tokio::test]
async fn cluster_scoped_objects_are_indexed_under_all_namespaces_only() {
    let (_env, cache, ctx) = setup().await;
    cache
        .index_field::<Namespace>("metadata.name.first", |n: &Namespace| {
            n.metadata
                .name
                .as_deref()
                .and_then(|s| s.chars().next())
                .map(|c| c.to_string())
                .into_iter()
                .collect()
        })
        .expect("index");
    let hits = cache
        .list::<Namespace>(&ListOptions::new().matching_field("metadata.name.first", "k"))
        .await
        .expect("list");
    let mut names: Vec<String> = hits
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["kube-node-lease", "kube-public", "kube-system"]);
    let inf = cache.get_informer::<Namespace>();
    let raw = inf
        .store()
        .by_index("field:metadata.name.first", "__all_namespaces/e")
        .expect("index");
    assert_eq!(raw.len(), 1, "only `east` starts with e");
    let ns: Arc<Namespace> = cache.get("", "west").await.expect("cluster-scoped get");
    assert_eq!(ns.metadata.name.as_deref(), Some("west"));
    ctx.cancel();
}
