//! The shared informer cache against ctrl-envtest over HTTP: one watch per type however
//! many users, late handlers, relist diffs after compaction, slow-handler overflow,
//! resync, and the cache options (ported from controller-runtime's
//! `pkg/cache/cache_test.go` and `informer_cache_test.go`).

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl_envtest::{Environment, FaultMatch, Verb};
use ctrl_runtime::cache::{self, ByObject, Cache, ListOptions, Notification, Options, Reader};
use ctrl_runtime::client::Client;
use ctrl_runtime::controller::{Controller, Options as ControllerOptions};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::{self, Action, Request};
use ctrl_runtime::source::Kind;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use parking_lot::Mutex;
use support::eventually;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn cm(ns: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_string(), "demo".to_string())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), name.to_string())])),
        ..Default::default()
    }
}

async fn create(env: &Environment, ns: &str, name: &str) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), ns);
    api.create(&PostParams::default(), &cm(ns, name))
        .await
        .expect("create configmap")
}

async fn namespace(env: &Environment, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client());
    let mut ns = k8s_openapi::api::core::v1::Namespace::default();
    ns.metadata.name = Some(name.into());
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// Starts `cache` in the background; the token stops it.
fn start(cache: &Cache) -> CancellationToken {
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    ctx
}

/// Starts `cache` and waits until it runs and its informers synced.
async fn start_synced(cache: &Cache) -> CancellationToken {
    let ctx = start(cache);
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    ctx
}

fn watches(env: &Environment, resource: &str) -> usize {
    env.faults()
        .count_requests(|r| r.is_watch() && r.resource.as_deref() == Some(resource))
}

type Log = Arc<Mutex<Vec<String>>>;

/// A handler that logs `create a [initial]`, `update a`, `delete a [unknown]`.
fn recorder(log: &Log) -> impl Fn(Notification<ConfigMap>) + Send + Sync + 'static {
    let log = log.clone();
    move |n| {
        let name = |c: &ConfigMap| c.metadata.name.clone().unwrap_or_default();
        let line = match n {
            Notification::Create(e) => {
                let init = if e.is_in_initial_list { " initial" } else { "" };
                format!("create {}{init}", name(&e.object))
            }
            Notification::Update(e) => format!("update {}", name(&e.object_new)),
            Notification::Delete(e) => {
                let unknown = if e.delete_state_unknown {
                    " unknown"
                } else {
                    ""
                };
                format!("delete {}{unknown}", name(&e.object))
            }
        };
        log.lock().push(line);
    }
}

fn has(log: &Log, line: &str) -> bool {
    log.lock().iter().any(|l| l == line)
}

#[tokio::test]
async fn two_controllers_and_a_client_share_one_watch() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let client = Client::new(env.client(), cache.clone());
    let ctx = start(&cache);
    let seen: Arc<Mutex<Vec<(usize, Request)>>> = Arc::default();
    let mut controllers = Vec::new();
    for i in 0..2 {
        let seen = seen.clone();
        let r = reconcile::func(move |_ctx, req| {
            let seen = seen.clone();
            async move {
                seen.lock().push((i, req));
                Ok(Action::done())
            }
        });
        let opts = ControllerOptions {
            skip_name_validation: Some(true),
            ..Default::default()
        };
        let c = Controller::new(format!("cm-{i}"), r, opts).expect("controller");
        c.watch(Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject))
            .await
            .expect("watch");
        let (c2, x) = (c.clone(), ctx.clone());
        tokio::spawn(async move { c2.start(x).await });
        controllers.push(c);
    }
    create(&env, "default", "shared").await;
    let want = Request::new("default", "shared");
    eventually("both controllers reconcile", || {
        let s = seen.lock();
        (0..2).all(|i| s.iter().any(|(j, r)| *j == i && *r == want))
    })
    .await;
    let got = client
        .get::<ConfigMap>("default", "shared")
        .await
        .expect("client get");
    assert_eq!(got.metadata.name.as_deref(), Some("shared"));
    let listed = client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("client list");
    assert_eq!(listed.len(), 1);
    assert!(cache.has_synced());
    assert_eq!(watches(&env, "configmaps"), 1, "one watch for every user");
    ctx.cancel();
}

#[tokio::test]
async fn late_handler_gets_a_create_per_existing_object_then_live_events() {
    let env = Environment::start().await.expect("envtest");
    for i in 0..20 {
        create(&env, "default", &format!("cm-{i:02}")).await;
    }
    let cache = Cache::new(env.client(), Options::default());
    let informer = cache.get_informer::<ConfigMap>();
    let early: Log = Arc::default();
    let early_reg = informer.add_event_handler(recorder(&early));
    let ctx = start(&cache);
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    eventually("early handler synced", || early_reg.has_synced()).await;
    assert_eq!(early.lock().len(), 20);
    assert!(early.lock().iter().all(|l| l.ends_with(" initial")));

    let late: Log = Arc::default();
    let reg = informer.add_event_handler(recorder(&late));
    eventually("late handler synced", || reg.has_synced()).await;
    let mut lines = late.lock().clone();
    lines.sort();
    let want: Vec<String> = (0..20)
        .map(|i| format!("create cm-{i:02} initial"))
        .collect();
    assert_eq!(lines, want);

    create(&env, "default", "after").await;
    eventually("live create", || {
        has(&late, "create after") && has(&early, "create after")
    })
    .await;
    informer.remove_event_handler(&reg);
    create(&env, "default", "after-removal").await;
    eventually("early sees it", || has(&early, "create after-removal")).await;
    assert!(!has(&late, "create after-removal"));
    ctx.cancel();
}

#[tokio::test]
async fn events_arrive_in_order_per_object() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let log: Log = Arc::default();
    cache
        .get_informer::<ConfigMap>()
        .add_event_handler(recorder(&log));
    let ctx = start(&cache);
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut obj = create(&env, "default", "a").await;
    for i in 0..5 {
        obj.data = Some(BTreeMap::from([("i".to_string(), i.to_string())]));
        obj = api
            .replace("a", &PostParams::default(), &obj)
            .await
            .expect("update");
    }
    api.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("delete seen", || has(&log, "delete a")).await;
    let lines = log.lock().clone();
    let mut want = vec!["create a".to_string()];
    want.extend((0..5).map(|_| "update a".to_string()));
    want.push("delete a".to_string());
    assert_eq!(lines, want);
    ctx.cancel();
}

#[tokio::test]
async fn relist_after_compaction_reports_what_changed_while_disconnected() {
    let env = Environment::start().await.expect("envtest");
    for n in ["a", "b", "c"] {
        create(&env, "default", n).await;
    }
    let cache = Cache::new(env.client(), Options::default());
    let log: Log = Arc::default();
    let informer = cache.get_informer::<ConfigMap>();
    informer.add_event_handler(recorder(&log));
    let ctx = start(&cache);
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    eventually("initial list", || log.lock().len() == 3).await;

    // Hold the watch down long enough to change things and compact behind its back.
    let faults = env.faults();
    let watch = FaultMatch::any().verb(Verb::Watch).resource("configmaps");
    faults.add_latency(watch, Duration::from_millis(500));
    faults.close_watches();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    create(&env, "default", "d").await;
    faults.compact_history();

    eventually("relist delete", || has(&log, "delete b unknown")).await;
    eventually("relist create", || has(&log, "create d")).await;
    assert!(
        faults.count_requests(|r| r.is_list()) >= 1,
        "the relist is a list"
    );
    faults.clear();
    let names: Vec<String> = informer
        .store()
        .list()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(names, ["a", "c", "d"]);
    // Objects that survived the relist are reported as updates, never as deletes.
    assert!(!has(&log, "delete a unknown") && !has(&log, "delete c unknown"));
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_handler_overflows_into_coalesced_events_without_stalling_others() {
    let env = Environment::start().await.expect("envtest");
    let opts = Options {
        handler_buffer: 4,
        ..Default::default()
    };
    let cache = Cache::new(env.client(), opts);
    let informer = cache.get_informer::<ConfigMap>();
    let ctx = start(&cache);
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);

    // The slow handler blocks on its first event until released.
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let view: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let slow = {
        let (gate, view) = (gate.clone(), view.clone());
        informer.add_event_handler(move |n: Notification<ConfigMap>| {
            let (lock, cv) = &*gate;
            let mut open = lock.lock().unwrap_or_else(|e| e.into_inner());
            // Bounded, so a failing test cannot hang the runtime on this thread.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !*open && std::time::Instant::now() < deadline {
                open = cv
                    .wait_timeout(open, Duration::from_millis(100))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            drop(open);
            let mut v = view.lock();
            match n {
                Notification::Create(e) => {
                    v.insert(name_of(&e.object), rv_of(&e.object));
                }
                Notification::Update(e) => {
                    v.insert(name_of(&e.object_new), rv_of(&e.object_new));
                }
                Notification::Delete(e) => {
                    v.remove(&name_of(&e.object));
                }
            }
        })
    };
    let fast_count = Arc::new(AtomicUsize::new(0));
    {
        let c = fast_count.clone();
        informer.add_event_handler(move |_n: Notification<ConfigMap>| {
            c.fetch_add(1, Ordering::SeqCst);
        });
    }
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..30 {
        create(&env, "default", &format!("o-{i:02}")).await;
    }
    for i in 0..10 {
        let mut o = api.get(&format!("o-{i:02}")).await.expect("get");
        o.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
        api.replace(&format!("o-{i:02}"), &PostParams::default(), &o)
            .await
            .expect("update");
    }
    for i in 20..30 {
        api.delete(&format!("o-{i:02}"), &DeleteParams::default())
            .await
            .expect("delete");
    }
    // The fast handler saw every event while the slow one is still stuck.
    eventually("the fast handler sees 50 events", || {
        fast_count.load(Ordering::SeqCst) >= 50
    })
    .await;
    assert_eq!(fast_count.load(Ordering::SeqCst), 50);
    assert!(slow.coalesced() > 0, "the slow handler overflowed");

    // Release: the slow handler converges on the store's view.
    {
        let (lock, cv) = &*gate;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
    let want: HashMap<String, String> = informer
        .store()
        .list()
        .iter()
        .map(|o| (name_of(o), rv_of(o)))
        .collect();
    assert_eq!(want.len(), 20);
    eventually("slow handler converges", || *view.lock() == want).await;
    ctx.cancel();
}

fn name_of(c: &ConfigMap) -> String {
    c.metadata.name.clone().unwrap_or_default()
}

fn rv_of(c: &ConfigMap) -> String {
    c.metadata.resource_version.clone().unwrap_or_default()
}

/// controller-runtime's default sync period: ten hours.
const TEN_HOURS: Duration = Duration::from_secs(10 * 3600);

#[tokio::test(start_paused = true)]
async fn resync_replays_every_object_as_an_update_with_old_equal_new() {
    let env = Environment::start().await.expect("envtest");
    let api: Api<ConfigMap> = Api::namespaced(env.in_memory_client(), "default");
    api.create(&PostParams::default(), &cm("default", "r"))
        .await
        .expect("create");
    let opts = Options {
        sync_period: TEN_HOURS,
        ..Default::default()
    };
    let cache = Cache::new(env.in_memory_client(), opts);
    let resyncs: Arc<Mutex<Vec<Instant>>> = Arc::default();
    {
        let resyncs = resyncs.clone();
        cache
            .get_informer::<ConfigMap>()
            .add_event_handler(move |n: Notification<ConfigMap>| {
                if let Notification::Update(e) = n
                    && Arc::ptr_eq(&e.object_old, &e.object_new)
                {
                    resyncs.lock().push(Instant::now());
                }
            });
    }
    let started = Instant::now();
    let ctx = start(&cache);
    // Twenty virtual hours: each resync comes a jittered period (0.9 to 1.1 of it, as
    // client-go jitters) after the last, none sooner.
    tokio::time::sleep(TEN_HOURS.mul_f64(2.2) + Duration::from_secs(1)).await;
    let at = resyncs.lock().clone();
    assert_eq!(at.len(), 2, "two resyncs of the one object: {at:?}");
    let mut last = started;
    for t in at {
        let gap = t.duration_since(last);
        assert!(
            gap >= TEN_HOURS.mul_f64(0.9) && gap <= TEN_HOURS.mul_f64(1.1),
            "a resync {gap:?} after the last"
        );
        last = t;
    }
    ctx.cancel();
}

#[tokio::test]
async fn namespaces_selectors_and_transforms_scope_the_cache() {
    let env = Environment::start().await.expect("envtest");
    for ns in ["team-a", "team-b"] {
        namespace(&env, ns).await;
        create(&env, ns, "x").await;
    }
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "team-a");
    let mut other = cm("team-a", "unlabelled");
    other.metadata.labels = None;
    api.create(&PostParams::default(), &other)
        .await
        .expect("create");
    let opts = Options::default()
        .default_namespaces(["team-a"])
        .by_object::<ConfigMap>(ByObject::new().label_selector("app=demo").transform(
            |c: &mut ConfigMap| {
                c.data = None;
            },
        ));
    let cache = Cache::new(env.client(), opts);
    let ctx = start_synced(&cache).await;
    let all = cache
        .list::<ConfigMap>(&ListOptions::new())
        .await
        .expect("list");
    assert_eq!(all.len(), 1, "only labelled objects of team-a: {all:?}");
    assert_eq!(all[0].metadata.namespace.as_deref(), Some("team-a"));
    assert!(all[0].data.is_none(), "the per-type transform ran");
    let missing = cache.get::<ConfigMap>("team-b", "x").await;
    assert!(matches!(missing, Err(e) if e.is_not_found()));
    // Cluster-scoped types ignore the namespace restriction.
    let nss = cache
        .list::<k8s_openapi::api::core::v1::Namespace>(&ListOptions::new())
        .await
        .expect("namespaces");
    assert!(nss.len() >= 6);
    ctx.cancel();
}

#[tokio::test]
async fn default_transform_strips_managed_fields_unless_disabled() {
    let env = Environment::start().await.expect("envtest");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut obj = create(&env, "default", "m").await;
    // An update by a named field manager records managed fields, as on a real API
    // server.
    obj.metadata.managed_fields = None;
    let pp = PostParams {
        field_manager: Some("transform-test".into()),
        ..Default::default()
    };
    let stored = api.replace("m", &pp, &obj).await.expect("update");
    assert!(stored.metadata.managed_fields.is_some());

    let stripped = Cache::new(env.client(), Options::default());
    let kept = Cache::new(
        env.client(),
        Options {
            default_transform: None,
            ..Default::default()
        },
    );
    let (c1, c2) = (start_synced(&stripped).await, start_synced(&kept).await);
    let a = stripped
        .get::<ConfigMap>("default", "m")
        .await
        .expect("get");
    let b = kept.get::<ConfigMap>("default", "m").await.expect("get");
    assert!(b.metadata.managed_fields.is_some());
    // Stripped while decoding (the informer skips the list): the rest is the server's.
    let mut want = stored.clone();
    want.metadata.managed_fields = None;
    assert_eq!(ConfigMap::clone(&a), want);
    c1.cancel();
    c2.cancel();
}

#[tokio::test]
async fn metadata_only_and_dynamic_informers_are_separate_from_typed_ones() {
    let env = Environment::start().await.expect("envtest");
    create(&env, "default", "meta").await;
    let cache = Cache::new(env.client(), Options::default());
    let ctx = start_synced(&cache).await;
    let typed = cache
        .get::<ConfigMap>("default", "meta")
        .await
        .expect("typed");
    let meta = cache
        .get::<PartialObjectMeta<ConfigMap>>("default", "meta")
        .await
        .expect("metadata");
    let ar = ApiResource::erase::<ConfigMap>(&());
    let dynamic = cache
        .get_with::<DynamicObject>(&ar, "default", "meta")
        .await
        .expect("dynamic");
    assert_eq!(meta.metadata.uid, typed.metadata.uid);
    assert_eq!(dynamic.metadata.uid, typed.metadata.uid);
    assert_eq!(dynamic.data["data"]["k"], "meta");
    // Reads return at sync, which comes before the watch request: wait for it.
    eventually("three watches", || watches(&env, "configmaps") == 3).await;
    // A second read of each reuses its informer.
    cache
        .get::<PartialObjectMeta<ConfigMap>>("default", "meta")
        .await
        .expect("again");
    assert_eq!(watches(&env, "configmaps"), 3);
    ctx.cancel();
}

#[tokio::test]
async fn reads_fail_clearly_before_start_when_informers_are_missing_and_for_unknown_kinds() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let err = cache
        .get::<ConfigMap>("default", "x")
        .await
        .expect_err("not started");
    assert!(matches!(err, cache::Error::NotStarted { .. }), "{err}");

    let strict = Cache::new(
        env.client(),
        Options {
            reader_fail_on_missing_informer: true,
            ..Default::default()
        },
    );
    let ctx = start_synced(&strict).await;
    let err = strict
        .list::<ConfigMap>(&ListOptions::new())
        .await
        .expect_err("missing informer");
    assert!(matches!(err, cache::Error::MissingInformer { .. }), "{err}");
    strict.get_informer::<ConfigMap>();
    assert!(strict.list::<ConfigMap>(&ListOptions::new()).await.is_ok());

    let ar = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "example.com",
        "v1",
        "Nope",
    ));
    let err = strict.get_informer_with::<DynamicObject>(&ar).store().len();
    assert_eq!(err, 0);
    let err = strict
        .get_with::<DynamicObject>(&ar, "default", "x")
        .await
        .expect_err("kind not served");
    assert!(matches!(err, cache::Error::NoKindMatch { .. }), "{err}");
    assert!(err.to_string().contains("example.com/v1/Nope"), "{err}");

    let again = strict.start(CancellationToken::new()).await;
    assert!(matches!(again, Err(cache::Error::AlreadyStarted)));
    ctx.cancel();
}
