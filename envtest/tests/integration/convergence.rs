//! kube-runtime's `watcher` + `reflector` over thousands of ConfigMaps converge exactly to the
//! server's state while objects are created, updated and deleted concurrently — and again after
//! `faults().close_watches()` (resume) and `faults().compact_history()` (the watcher must re-list
//! once, not loop; counted in the request log). Run for full objects, for the metadata-only
//! `Api<PartialObjectMeta<ConfigMap>>` route, and for `watcher::Config::streaming_lists()`.

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::cm;
use ctrl_envtest::wait::Wait;
use ctrl_envtest::{Environment, RequestRecord, Verb};
use futures::{StreamExt, stream};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use rand::Rng;
use serde::de::DeserializeOwned;

/// Objects created before the watcher starts.
const SEED: usize = 5_000;
/// Names the mutators pick from (so creates, updates and deletes all hit).
const NAMES: usize = SEED + 500;
/// Concurrent mutating tasks.
const WRITERS: usize = 8;
const CONVERGE: Duration = Duration::from_secs(120);

fn name(i: usize) -> String {
    format!("cm-{i:05}")
}

async fn env() -> Environment {
    Environment::builder().start().await.expect("start envtest")
}

/// Creates `SEED` ConfigMaps, 32 requests in flight.
async fn seed(api: &Api<ConfigMap>) {
    stream::iter(0..SEED)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &cm(&name(i), &[("v", "0")]))
                    .await
                    .expect("seed create")
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
}

/// Random creates, merge-patch updates and deletes until `stop` is set; conflicts, 404s and
/// 409s from racing writers are expected and ignored. Returns how many writes succeeded.
fn spawn_writers(api: Api<ConfigMap>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let done = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..WRITERS)
            .map(|_| {
                let api = api.clone();
                let stop = stop.clone();
                let done = done.clone();
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let (i, op, v) = {
                            let mut rng = rand::rng();
                            (
                                rng.random_range(0..NAMES),
                                rng.random_range(0..10u8),
                                rng.random::<u32>(),
                            )
                        };
                        let n = name(i);
                        let ok = match op {
                            0..=3 => {
                                let patch = serde_json::json!({"data": {"v": v.to_string()}});
                                api.patch(&n, &PatchParams::default(), &Patch::Merge(&patch))
                                    .await
                                    .is_ok()
                            }
                            4..=6 => api
                                .create(&PostParams::default(), &cm(&n, &[("v", &v.to_string())]))
                                .await
                                .is_ok(),
                            _ => api.delete(&n, &Default::default()).await.is_ok(),
                        };
                        if ok {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        done.load(Ordering::Relaxed)
    })
}

/// name → resourceVersion, as the server has it right now.
async fn server_state(api: &Api<ConfigMap>) -> BTreeMap<String, String> {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect()
}

fn store_state<K: Resource + Clone + 'static>(store: &Store<K>) -> BTreeMap<String, String>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store
        .state()
        .iter()
        .map(|o| {
            (
                o.meta().name.clone().unwrap_or_default(),
                o.meta().resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until the reflector's store equals a fresh list, exactly (same names, same RVs).
async fn converge<K: Resource + Clone + 'static>(what: &str, store: &Store<K>, api: &Api<ConfigMap>)
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    let want = server_state(api).await;
    let wait = Wait::new().timeout(CONVERGE);
    let have = || async { store_state(store) };
    if let Err(timed_out) = wait.try_until(have, |have| *have == want).await {
        let have = timed_out.last;
        let missing = want.keys().filter(|k| !have.contains_key(*k)).count();
        let extra = have.keys().filter(|k| !want.contains_key(*k)).count();
        let stale = want
            .iter()
            .filter(|(k, v)| have.get(*k).is_some_and(|h| h != *v))
            .count();
        panic!(
            "{what}: no convergence: server {} objects, store {} ({missing} missing, {extra} extra, {stale} stale)",
            want.len(),
            have.len()
        );
    }
}

fn cm_requests(r: &RequestRecord, verb: Verb) -> bool {
    r.verb == Some(verb) && r.resource.as_deref() == Some("configmaps")
}

/// A list request of the watcher (paginated, `limit=500`), not one of the test's own lists.
fn watcher_list(r: &RequestRecord) -> bool {
    cm_requests(r, Verb::List) && r.query.contains("limit=")
}

/// The whole scenario for a watched type `K` (full or metadata-only ConfigMaps).
async fn scenario<K>(label: &str, config: watcher::Config)
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let env = env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let watched: Api<K> = Api::namespaced(env.client(), "default");
    seed(&api).await;

    // Writers race the initial (paginated or streaming) list.
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(api.clone(), stop.clone());
    let (reader, writer) = reflector::store::<K>();
    let driver = tokio::spawn(
        reflector::reflector(writer, watcher(watched, config))
            .default_backoff()
            .for_each(|_| async {}),
    );
    tokio::time::timeout(CONVERGE, reader.wait_until_ready())
        .await
        .expect("the watcher finishes its initial list")
        .expect("writer alive");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writers.await.expect("writers");
    assert!(writes > 0, "{label}: the writers made progress");
    converge(&format!("{label}: initial"), &reader, &api).await;
    let lists_before = faults.count_requests(watcher_list);
    let watches_before = faults.count_requests(|r| cm_requests(r, Verb::Watch));

    // Closed watches: the watcher resumes from its resourceVersion, no re-list.
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(api.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;
    faults.close_watches();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    writers.await.expect("writers");
    converge(&format!("{label}: after close_watches"), &reader, &api).await;
    assert_eq!(
        faults.count_requests(watcher_list),
        lists_before,
        "{label}: closed watches are resumed, not re-listed"
    );

    // Compaction past the watcher, then a closed watch: one in-stream 410, one re-list. The
    // watcher has seen every ConfigMap write (it converged), a Secret write moves the global
    // resourceVersion past it, compaction raises the floor to that; the writers restart at
    // once so that the re-list races them.
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let mut s = Secret::default();
    s.metadata.name = Some("moves-the-rv".into());
    secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("secret");
    faults.compact_history();
    faults.close_watches();
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(api.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    writers.await.expect("writers");
    converge(&format!("{label}: after compaction"), &reader, &api).await;
    let lists = faults.count_requests(watcher_list) - lists_before;
    let watches = faults.count_requests(|r| cm_requests(r, Verb::Watch)) - watches_before;
    // A paginated re-list is several list requests (pages of 500); a streaming list is a watch.
    let relisted = if label.contains("streaming") {
        faults.count_requests(|r| {
            cm_requests(r, Verb::Watch) && r.query.contains("sendInitialEvents=true")
        }) >= 2
    } else {
        lists >= 1
    };
    assert!(
        relisted,
        "{label}: the watcher re-listed after the 410 ({lists} lists, {watches} watches)"
    );
    let pages = SEED.div_ceil(500) + 2;
    assert!(
        lists <= 2 * pages,
        "{label}: no list loop ({lists} list requests)"
    );
    assert!(
        watches <= 12,
        "{label}: no watch loop ({watches} watch requests)"
    );
    assert!(
        faults
            .requests()
            .iter()
            .filter(|r| cm_requests(r, Verb::Watch))
            .all(|r| r.status == 200),
        "{label}: every watch answered 200 (410s travel inside the stream)"
    );
    driver.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_and_reflector_converge_with_concurrent_writes_and_faults() {
    scenario::<ConfigMap>("objects", watcher::Config::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_watcher_converges() {
    scenario::<PartialObjectMeta<ConfigMap>>("metadata", watcher::Config::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_watcher_converges() {
    scenario::<ConfigMap>("streaming", watcher::Config::default().streaming_lists()).await;
}
