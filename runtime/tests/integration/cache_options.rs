//! Cache configuration against ctrl-envtest over HTTP: per-namespace selectors and
//! transforms with all namespaces mixed in (Go's `DefaultNamespaces` map),
//! `remove_informer`, the watch error handler, the list page size, and a
//! `source::Informer` feeding a controller from an informer the test holds.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl_envtest::{Environment, FaultMatch, FaultStatus, Verb};
use ctrl_runtime::cache::{
    Cache, ListOptions, NAMESPACE_ALL, NamespaceConfig, Notification, Options, Reader,
};
use ctrl_runtime::controller::{Controller, Options as ControllerOptions};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::{self, Action, Request};
use ctrl_runtime::source::{self, Source};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use support::eventually;
use tokio_util::sync::CancellationToken;

fn cm(ns: &str, name: &str, keep: bool) -> ConfigMap {
    let labels = keep.then(|| BTreeMap::from([("keep".to_string(), "yes".to_string())]));
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            labels,
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn create(env: &Environment, ns: &str, name: &str, keep: bool) {
    Api::<ConfigMap>::namespaced(env.client(), ns)
        .create(&PostParams::default(), &cm(ns, name, keep))
        .await
        .expect("create configmap");
}

async fn namespaces(env: &Environment, names: &[&str]) {
    for n in names {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(n.to_string());
        Api::<Namespace>::all(env.client())
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace");
    }
}

async fn start(cache: &Cache) -> CancellationToken {
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    assert!(
        cache.wait_for_cache_sync(ctx.clone()).await,
        "the cache started"
    );
    ctx
}

fn annotate(value: &'static str) -> NamespaceConfig {
    NamespaceConfig::new().transform(move |m| {
        m.annotations
            .get_or_insert_with(Default::default)
            .insert("seen-by".into(), value.into());
    })
}

#[tokio::test]
async fn per_namespace_selectors_and_transforms_with_all_namespaces_mixed_in() {
    let env = Environment::start().await.expect("envtest");
    namespaces(&env, &["a", "b", "c"]).await;
    for (ns, name, keep) in [
        ("a", "x", true),
        ("a", "y", false),
        ("b", "z", false),
        ("c", "w", false),
    ] {
        create(&env, ns, name, keep).await;
    }
    let opts = Options::default()
        .namespace_config("a", NamespaceConfig::new().label_selector("keep=yes"))
        .namespace_config("b", annotate("b"))
        .namespace_config(NAMESPACE_ALL, annotate("all"));
    let cache = Cache::new(env.client(), opts);
    let ctx = start(&cache).await;
    let all = cache
        .list::<ConfigMap>(&ListOptions::new())
        .await
        .expect("list");
    let seen: Vec<(String, String, Option<String>)> = all
        .iter()
        .map(|c| {
            let m = &c.metadata;
            let by = m
                .annotations
                .as_ref()
                .and_then(|a| a.get("seen-by").cloned());
            (
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default(),
                by,
            )
        })
        .filter(|(ns, _, _)| ["a", "b", "c"].contains(&ns.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("a".into(), "x".into(), None),
            ("b".into(), "z".into(), Some("b".into())),
            ("c".into(), "w".into(), Some("all".into())),
        ],
        "a: only labelled objects, untransformed; b: its transform; c: the all-namespaces one"
    );
    let watches = || -> Vec<String> {
        env.faults()
            .requests()
            .into_iter()
            .filter(|r| r.is_watch() && r.resource.as_deref() == Some("configmaps"))
            .map(|r| format!("{} {}", r.path, r.query))
            .collect()
    };
    eventually("three watches open", || watches().len() >= 3).await;
    let watches = watches();
    assert_eq!(watches.len(), 3, "one per scope: {watches:?}");
    let everywhere = watches
        .iter()
        .find(|w| w.starts_with("/api/v1/configmaps"))
        .expect("an all-namespaces watch");
    assert!(
        everywhere.contains("metadata.namespace%21%3Da")
            && everywhere.contains("metadata.namespace%21%3Db"),
        "the all-namespaces watch excludes the named ones: {everywhere}"
    );
    // A later write in each scope lands once, under its own rules.
    create(&env, "c", "later", false).await;
    create(&env, "a", "later", false).await;
    create(&env, "a", "kept", true).await;
    eventually("a/kept arrives", || {
        cache
            .get_informer::<ConfigMap>()
            .store()
            .get("a/kept")
            .is_some()
    })
    .await;
    let informer = cache.get_informer::<ConfigMap>();
    assert!(informer.store().get("c/later").is_some());
    assert!(
        informer.store().get("a/later").is_none(),
        "a's selector filters it out"
    );
    ctx.cancel();
}

#[tokio::test]
async fn watch_errors_reach_the_handler_and_the_page_size_is_sent() {
    let env = Environment::start().await.expect("envtest");
    env.faults().fail_next(
        1,
        FaultMatch::any().verb(Verb::List).resource("configmaps"),
        FaultStatus::internal_error(),
    );
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e = errors.clone();
    let opts = Options {
        page_size: Some(7),
        watch_error_handler: Some(Arc::new(
            move |informer: &str, err: &kube::runtime::watcher::Error| {
                e.lock().push(format!("{informer}: {err}"));
            },
        )),
        ..Options::default()
    };
    let cache = Cache::new(env.client(), opts);
    let ctx = start(&cache).await;
    cache
        .list::<ConfigMap>(&ListOptions::new())
        .await
        .expect("list after the retry");
    let errors = errors.lock().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("v1/ConfigMap (all namespaces): "),
        "{errors:?}"
    );
    let lists: Vec<String> = env
        .faults()
        .requests()
        .into_iter()
        .filter(|r| r.is_list() && r.resource.as_deref() == Some("configmaps"))
        .map(|r| r.query)
        .collect();
    assert!(lists.len() >= 2, "{lists:?}");
    assert!(lists.iter().all(|q| q.contains("limit=7")), "{lists:?}");
    ctx.cancel();
}

#[tokio::test]
async fn a_removed_informer_stops_and_the_next_use_starts_another() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let ctx = start(&cache).await;
    create(&env, "default", "before", false).await;
    let old = cache.get_informer::<ConfigMap>();
    let events = Arc::new(AtomicUsize::new(0));
    let n = events.clone();
    old.add_event_handler(move |_: Notification<ConfigMap>| {
        n.fetch_add(1, Ordering::SeqCst);
    });
    assert!(old.wait_for_sync(ctx.clone()).await);
    eventually("the initial create is delivered", || {
        events.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(cache.remove_informer::<ConfigMap>());
    assert!(!cache.remove_informer::<ConfigMap>(), "already gone");
    create(&env, "default", "after", false).await;
    let fresh = cache
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("list");
    assert_eq!(fresh.len(), 2, "a new informer serves the read");
    assert!(
        old.store().get("default/after").is_none(),
        "the removed one saw nothing more"
    );
    assert_eq!(events.load(Ordering::SeqCst), 1);
    let watches = || {
        env.faults()
            .count_requests(|r| r.is_watch() && r.resource.as_deref() == Some("configmaps"))
    };
    eventually("the new informer watches", || watches() >= 2).await;
    assert_eq!(watches(), 2, "one watch each");
    ctx.cancel();
}

#[tokio::test]
async fn an_informer_source_feeds_a_controller() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let ctx = start(&cache).await;
    let informer = cache.get_informer::<ConfigMap>();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let r = reconcile::func(move |_ctx, req: Request| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(req);
            Ok(Action::done())
        }
    });
    let opts = ControllerOptions {
        skip_name_validation: Some(true),
        ..Default::default()
    };
    let c = Controller::new("informer-source", r, opts).expect("controller");
    let src = source::Informer::new(informer, EnqueueRequestForObject);
    assert_eq!(src.name(), "informer source: v1/ConfigMap");
    c.watch(src).await.expect("watch");
    let (c2, x) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c2.start(x).await });
    create(&env, "default", "fed", false).await;
    let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a reconcile arrived")
        .expect("open");
    assert_eq!(got, Request::new("default", "fed"));
    ctx.cancel();
}
