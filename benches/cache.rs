//! Cache memory per object: ctrl's informer cache next to kube-runtime's reflector
//! store, both filled from the same ctrl-envtest in the same run, plus a bare
//! `Vec<ConfigMap>` of the listed objects as the floor.
//!
//! Every ConfigMap carries 2 labels, 1 annotation, 3 data keys and one managedFields
//! entry (envtest does not track managed fields yet, so the bench stores one through an
//! update, as a real API server would have). Memory is what the global allocator holds
//! (`cap`) after the cache synced, minus what it held before, divided by the object
//! count. `cargo bench --bench cache` runs 100,000 objects; without `--bench` (as
//! `cargo test --all-targets` runs it) it uses 200 so that it finishes in seconds.
//!
//! It also prints the peak during sync: the most the allocator held above the starting
//! point while the store filled, sampled every millisecond by a thread of its own. The
//! envtest server runs in the same process, so the peak includes what the server allocates
//! to answer (a list page, or the streamed events); the ctrl cache is measured both with a
//! paged list then a watch and with a streaming list (`Options::streaming_lists`, one watch
//! with `sendInitialEvents=true`), side by side.

#[path = "support/heap.rs"]
mod heap;
#[path = "support/objects.rs"]
mod objects;

use std::time::{Duration, Instant};

use cap::Cap;
use ctrl::cache::{Cache, Options};
use ctrl_envtest::Environment;
use futures::StreamExt;
use heap::Peak;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

const NS: &str = "default";

fn object(i: usize) -> ConfigMap {
    let mut cm = objects::config_map(format!("cm-{i:06}"), i);
    cm.metadata.namespace = Some(NS.into());
    cm
}

fn managed_fields() -> Vec<ManagedFieldsEntry> {
    let fields = serde_json::json!({
        "f:data": {".": {}, "f:config.yaml": {}, "f:mode": {}, "f:version": {}},
        "f:metadata": {
            "f:annotations": {".": {}, "f:example.com/owner": {}},
            "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:shard": {}}
        }
    });
    vec![ManagedFieldsEntry {
        api_version: Some("v1".into()),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(fields)),
        manager: Some("kubectl-client-side-apply".into()),
        operation: Some("Update".into()),
        ..Default::default()
    }]
}

async fn populate(env: &Environment, n: usize) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let mf = managed_fields();
    futures::stream::iter(0..n)
        .map(|i| {
            let (api, mf) = (api.clone(), mf.clone());
            async move {
                let mut made = api
                    .create(&PostParams::default(), &object(i))
                    .await
                    .expect("create configmap");
                made.metadata.managed_fields = Some(mf);
                let name = made.metadata.name.clone().unwrap_or_default();
                api.replace(&name, &PostParams::default(), &made)
                    .await
                    .expect("store managedFields");
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
}

struct Row {
    name: &'static str,
    bytes: usize,
    sync: Duration,
    /// The most held above the start during sync.
    peak: usize,
}

/// Lets freed buffers settle, then reads the allocator.
async fn allocated() -> usize {
    tokio::time::sleep(Duration::from_millis(200)).await;
    ALLOC.allocated()
}

async fn bare(env: &Environment) -> (usize, Duration, usize) {
    let before = allocated().await;
    let peak = Peak::start(|| ALLOC.allocated());
    let t = Instant::now();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let items = api.list(&ListParams::default()).await.expect("list").items;
    let sync = t.elapsed();
    let peak = peak.stop(before);
    let bytes = allocated().await.saturating_sub(before);
    drop(items);
    (bytes, sync, peak)
}

async fn kube_reflector(env: &Environment) -> (usize, Duration, usize) {
    let before = allocated().await;
    let peak = Peak::start(|| ALLOC.allocated());
    let t = Instant::now();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(api, watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await.expect("reflector ready");
    let sync = t.elapsed();
    let peak = peak.stop(before);
    let bytes = allocated().await.saturating_sub(before);
    assert!(!reader.is_empty());
    task.abort();
    let _ = task.await;
    drop(reader);
    (bytes, sync, peak)
}

async fn ctrl_cache(env: &Environment, strip: bool, streaming: bool) -> (usize, Duration, usize) {
    let before = allocated().await;
    let peak = Peak::start(|| ALLOC.allocated());
    let t = Instant::now();
    let mut opts = if strip {
        Options::default()
    } else {
        Options {
            default_transform: None,
            ..Default::default()
        }
    };
    opts.streaming_lists = streaming;
    let cache = Cache::new(env.client(), opts);
    let informer = cache.get_informer::<ConfigMap>();
    let ctx = CancellationToken::new();
    let run = {
        let (c, x) = (cache.clone(), ctx.clone());
        tokio::spawn(async move { c.start(x).await })
    };
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    let sync = t.elapsed();
    let peak = peak.stop(before);
    let bytes = allocated().await.saturating_sub(before);
    assert!(!informer.store().is_empty());
    ctx.cancel();
    let _ = run.await;
    drop(informer);
    drop(cache);
    (bytes, sync, peak)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n = std::env::var("CACHE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 100_000 } else { 200 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let env = Environment::builder()
            .history_window(4 * n + 100)
            .start()
            .await
            .expect("envtest");
        let t = Instant::now();
        populate(&env, n).await;
        println!(
            "cache bench ({} mode): {n} ConfigMaps in one namespace, populated in {:.1?}",
            if full { "full" } else { "quick" },
            t.elapsed()
        );
        let mut rows = Vec::new();
        let row = |name, (bytes, sync, peak)| Row {
            name,
            bytes,
            sync,
            peak,
        };
        rows.push(row("bare Vec<ConfigMap> (one list)", bare(&env).await));
        rows.push(row(
            "kube-runtime reflector Store",
            kube_reflector(&env).await,
        ));
        let kept = ctrl_cache(&env, false, false).await;
        rows.push(row("ctrl Cache, managedFields kept", kept));
        let strip = ctrl_cache(&env, true, false).await;
        rows.push(row("ctrl Cache, default (strip managedFields)", strip));
        let streamed = ctrl_cache(&env, true, true).await;
        rows.push(row("ctrl Cache, default, streaming list", streamed));
        let kube = rows[1].bytes.max(1) as f64;
        println!(
            "{:<44} {:>14} {:>12} {:>12} {:>16}",
            "store", "bytes/object", "vs kube", "list+sync", "peak in sync MiB"
        );
        for r in &rows {
            println!(
                "{:<44} {:>14.0} {:>11.2}x {:>10.0?} {:>16.1}",
                r.name,
                r.bytes as f64 / n as f64,
                r.bytes as f64 / kube,
                r.sync,
                r.peak as f64 / (1024.0 * 1024.0)
            );
        }
        println!(
            "peak during sync, streaming list vs paged list: {:.2}x",
            rows[4].peak as f64 / rows[3].peak.max(1) as f64
        );
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "bar ctrl (kept) <= kube-runtime: {}; ctrl (strip) < kube-runtime: {}",
            verdict(rows[2].bytes <= rows[1].bytes),
            verdict(rows[3].bytes < rows[1].bytes)
        );
    });
}
