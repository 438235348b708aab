//! Multi-cluster bench: one controller over 1, 10 and 50 in-process member clusters
//! (ctrl-envtest, reached over HTTP) with 1,000 ConfigMaps each, engaged by a
//! `StaticProvider`. Per row: the time from the manager's start until every object of
//! every member was reconciled once (engage, list, watch, reconcile), and the heap
//! (`cap`, what the global allocator holds) the run added per member cluster. Then the
//! queue alone: a lone request of a quiet cluster behind 10,000 of a busy one, fair
//! (`multicluster::fair_queue`) against the plain priority queue: how many items were
//! handed out before it and how long it waited.
//!
//! `cargo bench --bench multicluster` runs the full sizes; without `--bench` (as
//! `cargo test --all-targets` runs it) a quick mode runs 1 and 3 members of 20 objects
//! and 1,000 queued items.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use cap::Cap;
use ctrl::handler::EnqueueRequestForObject;
use ctrl::multicluster::{
    self, Cluster, ClusterReconciler, ClusterRequest, ClusterSource, StaticProvider,
};
use ctrl::prelude::*;
use ctrl::source::{BoxSource, Kind};
use ctrl::workqueue::{PriorityQueue, Queue, QueueConfig, default_item_rate_limiter};
use ctrl_envtest::Environment;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// Creates `n` ConfigMaps `cm-<i>` in `default` of `env`, 8 at a time.
async fn fill(env: &Environment, n: usize) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("cm-{i}")),
                        ..Default::default()
                    },
                    data: Some([("k".to_string(), i.to_string())].into()),
                    ..Default::default()
                };
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
}

/// One row: `members` clusters of `objects` ConfigMaps; returns (time to reconcile
/// all, heap added per member).
async fn row(members: usize, objects: usize) -> (Duration, usize) {
    let hub = Environment::start().await.expect("hub");
    let mut envs = Vec::new();
    for _ in 0..members {
        let env = Environment::start().await.expect("member");
        fill(&env, objects).await;
        envs.push(env);
    }
    let heap_before = ALLOC.allocated();
    let opts = ctrl::Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let local = Manager::new(hub.client(), opts).expect("manager");
    let mgr = multicluster::Manager::new(local.clone());
    let provider = envs
        .iter()
        .enumerate()
        .fold(StaticProvider::new(), |p, (i, e)| {
            p.with_cluster(format!("member-{i}"), e.client())
        });
    mgr.add_provider(provider).expect("provider");
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let all = Arc::new(Notify::new());
    let (s, a, want) = (seen.clone(), all.clone(), members * objects);
    let reconciler = reconcile::typed_func(move |_ctx, req: ClusterRequest| {
        let (s, a) = (s.clone(), a.clone());
        async move {
            if req.name.starts_with("cm-") {
                let mut s = s.lock();
                if s.insert(req) && s.len() == want {
                    a.notify_one();
                }
            }
            Ok(Action::done())
        }
    });
    let source = ClusterSource::new(
        &mgr,
        "configmaps",
        Arc::new(|c: &Cluster| {
            Arc::new(Kind::<ConfigMap, Request>::new(
                &c.cache(),
                EnqueueRequestForObject,
            )) as BoxSource<Request>
        }),
    );
    let controller = Controller::<ClusterRequest>::with_sources(
        "multicluster-bench",
        ClusterReconciler::new(&mgr, reconciler),
        ctrl::controller::Options {
            max_concurrent_reconciles: 4,
            skip_name_validation: Some(true),
            new_queue: Some(multicluster::fair_queue()),
            ..Default::default()
        },
        vec![Arc::new(source) as BoxSource<ClusterRequest>],
    )
    .expect("controller");
    local.add(controller).expect("add");
    let stop = CancellationToken::new();
    let t = Instant::now();
    let running = tokio::spawn({
        let (local, stop) = (local.clone(), stop.clone());
        async move { local.start(stop).await }
    });
    all.notified().await;
    let took = t.elapsed();
    let heap = ALLOC.allocated().saturating_sub(heap_before) / members;
    stop.cancel();
    let _ = running.await;
    (took, heap)
}

/// A lone request of cluster B behind `busy` of cluster A: items handed out before it,
/// and how long it waited, with `q`.
async fn lone(q: Arc<dyn Queue<ClusterRequest>>, busy: usize) -> (usize, Duration) {
    for i in 0..busy {
        q.add(ClusterRequest::new(
            "member-a",
            "default",
            format!("cm-{i}"),
        ));
    }
    let lone = ClusterRequest::new("member-b", "default", "lone");
    q.add(lone.clone());
    let t = Instant::now();
    let mut before = 0;
    while let Some((r, _)) = q.get_boxed().await {
        q.done(&r);
        if r == lone {
            break;
        }
        before += 1;
        tokio::task::yield_now().await;
    }
    q.shut_down();
    (before, t.elapsed())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (sizes, objects, busy) = if full {
        (vec![1, 10, 50], 1_000, 10_000)
    } else {
        (vec![1, 3], 20, 1_000)
    };
    println!(
        "multicluster bench ({}): {objects} ConfigMaps per member",
        if full { "full" } else { "quick" }
    );
    println!(
        "{:>8} {:>22} {:>20}",
        "members", "engage + reconcile all", "heap per member"
    );
    for n in sizes {
        let (took, heap) = row(n, objects).await;
        println!("{n:>8} {:>20.1?} {:>17} KiB", took, heap / 1024);
    }
    let fair = multicluster::fair_queue()("", default_item_rate_limiter());
    let plain: Arc<dyn Queue<ClusterRequest>> =
        Arc::new(PriorityQueue::new(QueueConfig::default()));
    let (fb, ft) = lone(fair, busy).await;
    let (pb, pt) = lone(plain, busy).await;
    println!("lone request of a quiet cluster behind {busy} of a busy one:");
    println!("  fair queue:  {fb:>6} handed out before it, waited {ft:.1?}");
    println!(
        "  plain queue: {pb:>6} handed out before it, waited {pt:.1?} ({:.0}x the fair wait)",
        pt.as_secs_f64() / ft.as_secs_f64().max(1e-9)
    );
}
