//! `source::Kind::wait_for_sync` against ctrl-envtest: it is event-driven (woken by the
//! handler registration once the initial list was handed to the event handler, with no
//! polling interval) and, when its context is cancelled first, it fails with an error
//! naming the source (controller-runtime's `Kind.WaitForSync`).

use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::Request;
use ctrl_runtime::source::{Kind, Source};
use ctrl_runtime::workqueue::{QueueConfig, RateLimitingQueue};
use futures::future::join_all;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// More objects than one delivery batch (64), so the handler gets the initial list in
/// several turns of its delivery task.
const OBJECTS: usize = 150;

async fn fill_namespace(env: &Environment, ns: &str) {
    let namespaces: Api<Namespace> = Api::all(env.client());
    let meta = ObjectMeta {
        name: Some(ns.into()),
        ..Default::default()
    };
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta,
                ..Default::default()
            },
        )
        .await
        .expect("create namespace");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), ns);
    for chunk in (0..OBJECTS).collect::<Vec<_>>().chunks(25) {
        join_all(chunk.iter().map(|i| {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("cm-{i}")),
                    ..Default::default()
                },
                ..Default::default()
            };
            let api = api.clone();
            async move { api.create(&PostParams::default(), &cm).await }
        }))
        .await
        .into_iter()
        .for_each(|r| {
            r.expect("create configmap");
        });
    }
}

fn start_cache(cache: &Cache) -> CancellationToken {
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    ctx
}

fn queue() -> Arc<RateLimitingQueue<Request>> {
    Arc::new(RateLimitingQueue::new(QueueConfig::default()))
}

#[tokio::test]
async fn wait_for_sync_returns_once_the_initial_list_is_delivered_without_polling() {
    let env = Environment::start().await.expect("envtest");
    fill_namespace(&env, "sync").await;
    let all: Api<ConfigMap> = Api::all(env.client());
    let listed = all.list(&ListParams::default()).await.expect("list").items;
    assert!(listed.len() >= OBJECTS);

    let cache = Cache::new(env.client(), Options::default());
    let ctx = start_cache(&cache);
    cache.get_informer::<ConfigMap>();
    assert!(cache.wait_for_cache_sync(ctx.clone()).await, "cache synced");

    // From here on no I/O is needed: the informer is synced, so the source registers
    // its handler at once and the handler replays the store. With time paused, any
    // timer the wait used (a polling tick) would move the clock.
    tokio::time::pause();
    let q = queue();
    let src = Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject);
    let before = tokio::time::Instant::now();
    src.start(ctx.clone(), q.clone()).await.expect("start");
    src.wait_for_sync(ctx.clone()).await.expect("synced");
    let waited = tokio::time::Instant::now() - before;
    let delivered = q.len();
    tokio::time::resume();

    assert_eq!(
        delivered,
        listed.len(),
        "every object of the initial list was handed to the handler before the wait ended"
    );
    assert_eq!(
        waited,
        Duration::ZERO,
        "the wait was woken by the delivery, not by a timer"
    );
    ctx.cancel();
}

#[tokio::test]
async fn wait_for_sync_fails_naming_the_source_when_ctx_is_cancelled() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let cache_ctx = start_cache(&cache);

    // A type the server does not serve: the source never registers its handler.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let src = Kind::<DynamicObject>::new_with(&cache, ar, EnqueueRequestForObject);
    let start_ctx = CancellationToken::new();
    src.start(start_ctx.clone(), queue()).await.expect("start");
    let wait_ctx = CancellationToken::new();
    wait_ctx.cancel();
    let err = src
        .wait_for_sync(wait_ctx)
        .await
        .expect_err("a cancelled wait must fail");
    assert!(
        err.to_string()
            .contains("kind source: example.com/v1/Gadget"),
        "{err}"
    );
    start_ctx.cancel();
    cache_ctx.cancel();
}

#[tokio::test]
async fn wait_for_sync_fails_naming_the_source_when_the_cache_never_syncs() {
    let env = Environment::start().await.expect("envtest");
    // The cache is never started: the source registers on the informer (the type is
    // served) but the informer never lists, so the registration never syncs.
    let cache = Cache::new(env.client(), Options::default());
    let src = Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject);
    let start_ctx = CancellationToken::new();
    src.start(start_ctx.clone(), queue()).await.expect("start");
    let wait_ctx = CancellationToken::new();
    let waiter = {
        let x = wait_ctx.clone();
        async move { src.wait_for_sync(x).await }
    };
    let cancel = async {
        // Give the source every chance to register; the wait must still be pending.
        tokio::time::sleep(Duration::from_millis(300)).await;
        wait_ctx.cancel();
    };
    let (res, ()) = tokio::join!(waiter, cancel);
    let err = res.expect_err("an unsynced cache must not report synced");
    assert!(
        err.to_string().contains("kind source: v1/ConfigMap"),
        "{err}"
    );
    start_ctx.cancel();
}
