//! Streaming lists (client-go's WatchList; kube's `watcher::Config::streaming_lists`) against
//! ctrl-envtest: a cache with the option syncs through one watch with `sendInitialEvents=true`
//! and no list (envtest's request log shows which), per type or manager-wide; and when the
//! server refuses the streaming watch, the informer falls back to list and watch and still
//! syncs and follows changes.

use std::collections::BTreeMap;

use ctrl_envtest::{Environment, FaultMatch, FaultStatus, RequestRecord, Verb};
use ctrl_runtime::cache::{ByObject, Cache, ListOptions, Options, Reader};
use ctrl_runtime::client::{Client, ObjectWriter};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 2_000;

fn cm(name: String) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

/// An environment holding [`OBJECTS`] ConfigMaps, its request log cleared.
async fn filled() -> Environment {
    let env = Environment::start().await.expect("envtest");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let creates = (0..OBJECTS).map(|i| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &cm(format!("cm-{i}")))
                .await
        }
    });
    for r in futures::future::join_all(creates).await {
        r.expect("create");
    }
    env.faults().clear_requests();
    env
}

/// How many ConfigMaps the server holds in all namespaces.
async fn server_count(env: &Environment) -> usize {
    let api: Api<ConfigMap> = Api::all(env.client());
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len()
}

/// Starts a cache with `opts` and syncs its ConfigMap informer.
async fn synced(env: &Environment, opts: Options) -> (Cache, CancellationToken) {
    let cache = Cache::new(env.client(), opts);
    let inf = cache.get_informer::<ConfigMap>();
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    assert!(inf.wait_for_sync(ctx.clone()).await);
    (cache, ctx)
}

fn configmaps(r: &RequestRecord, verb: Verb) -> bool {
    r.verb == Some(verb) && r.resource.as_deref() == Some("configmaps")
}

fn streaming(r: &RequestRecord) -> bool {
    configmaps(r, Verb::Watch) && r.query.contains("sendInitialEvents=true")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_syncs_through_a_streaming_list() {
    let env = filled().await;
    let opts = Options {
        streaming_lists: true,
        ..Options::default()
    };
    let (cache, ctx) = synced(&env, opts).await;
    let log = env.faults().requests();
    let stored = cache.get_informer::<ConfigMap>().store().len();
    assert_eq!(stored, server_count(&env).await);
    assert!(stored >= OBJECTS);
    assert_eq!(log.iter().filter(|r| streaming(r)).count(), 1, "{log:?}");
    assert_eq!(log.iter().filter(|r| configmaps(r, Verb::List)).count(), 0);
    ctx.cancel();
}

#[tokio::test]
async fn streaming_lists_can_be_chosen_per_type() {
    let env = Environment::start().await.expect("envtest");
    env.faults().clear_requests();
    let opts = Options::default().by_object::<ConfigMap>(ByObject::new().streaming_lists(true));
    let (cache, ctx) = synced(&env, opts).await;
    cache
        .list::<Secret>(&ListOptions::new())
        .await
        .expect("secrets");
    let log = env.faults().requests();
    assert_eq!(log.iter().filter(|r| streaming(r)).count(), 1, "{log:?}");
    let secrets = |verb| {
        log.iter()
            .filter(|r| r.verb == Some(verb) && r.resource.as_deref() == Some("secrets"))
            .count()
    };
    assert_eq!(secrets(Verb::List), 1, "{log:?}");
    assert!(
        log.iter()
            .all(|r| r.resource.as_deref() != Some("secrets")
                || !r.query.contains("sendInitialEvents")),
        "{log:?}"
    );
    ctx.cancel();
}

#[tokio::test]
async fn a_refused_streaming_list_falls_back_to_list_and_watch() {
    let env = filled().await;
    env.faults().fail_next(
        1,
        FaultMatch::any().verb(Verb::Watch).resource("configmaps"),
        FaultStatus::new(422, "Invalid", "sendInitialEvents is forbidden for watch"),
    );
    let opts = Options {
        streaming_lists: true,
        ..Options::default()
    };
    let (cache, ctx) = synced(&env, opts).await;
    let log = env.faults().requests();
    assert_eq!(
        cache.get_informer::<ConfigMap>().store().len(),
        server_count(&env).await
    );
    let refused = log
        .iter()
        .position(|r| streaming(r) && r.injected)
        .expect("the refused streaming watch");
    let list = log
        .iter()
        .position(|r| configmaps(r, Verb::List))
        .expect("the fallback list");
    assert!(refused < list, "{log:?}");
    assert_eq!(log.iter().filter(|r| streaming(r)).count(), 1, "{log:?}");

    // The informer follows changes after the fallback.
    let client = Client::new(env.client(), cache.clone()).with_read_your_writes();
    client.create(&cm("late".into())).await.expect("create");
    let got = client
        .get::<ConfigMap>("default", "late")
        .await
        .expect("the new object in the cache");
    assert_eq!(got.metadata.name.as_deref(), Some("late"));
    ctx.cancel();
}
