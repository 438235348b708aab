//! Sharding bench: 1, 2 and 4 shards of ring `test` (ConfigMaps of one namespace) on one
//! ctrl-envtest, against one unsharded replica, in the same run. Per row: objects and
//! their JSON bytes in each shard's cache (the largest shard vs the unsharded replica;
//! goal <= 1/N + 10 %), and the time from create to first reconcile, p50 / p99 (goal:
//! within 1.2x of unsharded), with the sharder's webhook assigning objects as they are
//! created. Then, on 2 shards, a join: objects moved (goal <= 1.2 x 1/3).
//!
//! `cargo bench --bench sharding` creates 20,000 objects per row (`SHARDING_BENCH_OBJECTS`
//! to change it); without `--bench` (as `cargo test --all-targets` runs it) a quick
//! mode creates 100.

#[path = "../tests/sharding_support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ctrl::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use support::*;
use tokio::time::Instant;

/// Object name -> when its create returned.
type Created = Arc<Mutex<HashMap<String, Instant>>>;

/// One row of the table.
struct Row {
    name: String,
    max_cached: usize,
    max_bytes: usize,
    p50: Duration,
    p99: Duration,
}

/// Creates `n` ConfigMaps, 4 at a time, recording when each create returned.
async fn create(client: &kube::Client, n: usize, created: &Created) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let names: Vec<String> = (0..n).map(|i| format!("cm-{i}")).collect();
    for chunk in names.chunks(4) {
        let futs = chunk.iter().map(|name| {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                data: Some([("k".to_string(), "v".repeat(64))].into()),
                ..Default::default()
            };
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
                created.lock().insert(name.clone(), Instant::now());
            }
        });
        futures::future::join_all(futs).await;
    }
}

/// p50 / p99 of create -> first reconcile.
fn latencies(created: &Created, audit: &Audit) -> (Duration, Duration) {
    let mut first: HashMap<String, Instant> = HashMap::new();
    for r in audit.lock().iter() {
        let e = first.entry(r.object.clone()).or_insert(r.start);
        *e = (*e).min(r.start);
    }
    let created = created.lock();
    let mut v: Vec<Duration> = first
        .iter()
        .filter_map(|(o, t)| created.get(o).map(|c| t.saturating_duration_since(*c)))
        .collect();
    v.sort();
    let at = |p: usize| {
        v.get((v.len().max(1) - 1) * p / 100)
            .copied()
            .unwrap_or_default()
    };
    (at(50), at(99))
}

/// Objects and JSON bytes in `mgr`'s ConfigMap cache.
async fn cached(mgr: &ctrl::Manager) -> (usize, usize) {
    let list = mgr
        .cache()
        .list::<ConfigMap>(&ListOptions::new().in_namespace(NS))
        .await
        .expect("cache list");
    let bytes = list
        .iter()
        .map(|cm| serde_json::to_vec(cm.as_ref()).map_or(0, |b| b.len()))
        .sum();
    (list.len(), bytes)
}

/// A sharded row: `k` shards, `n` objects.
async fn sharded(k: usize, n: usize) -> Row {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let sharder = start_sharder_with_webhook(client.clone());
    let mut shards = Vec::new();
    for i in 0..k {
        shards.push(
            start_shard(
                client.clone(),
                &format!("s-{i}"),
                true,
                audit.clone(),
                Duration::ZERO,
                None,
            )
            .await,
        );
    }
    let ids: Vec<String> = shards.iter().map(|s| s.id.clone()).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert!(leases_held(&client, &refs).await);
    tokio::time::sleep(Duration::from_secs(1)).await; // the webhook is registered
    let created = Created::default();
    create(&client, n, &created).await;
    assert!(all_assigned_to(&client, &ids, n, Duration::from_secs(120)).await);
    wait_reconciled(&audit, n).await;
    let mut max = (0, 0);
    for s in &shards {
        max = max.max(cached(&s.mgr).await);
    }
    let (p50, p99) = latencies(&created, &audit);
    for s in shards {
        s.stop().await;
    }
    sharder.stop().await;
    Row {
        name: format!("{k} shard(s)"),
        max_cached: max.0,
        max_bytes: max.1,
        p50,
        p99,
    }
}

async fn wait_reconciled(audit: &Audit, n: usize) {
    let done = eventually(Duration::from_secs(120), || async {
        let runs = audit.lock();
        runs.iter()
            .map(|r| &r.object)
            .collect::<std::collections::HashSet<_>>()
            .len()
            >= n
    })
    .await;
    assert!(done, "every object reconciled");
}

/// The unsharded row: one plain controller over every ConfigMap of the namespace.
async fn unsharded(n: usize) -> Row {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let mgr = ctrl::Manager::new(
        client.clone(),
        ctrl::Options {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let a = audit.clone();
    ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .named("unsharded")
        .with_options(ctrl::controller::Options {
            skip_name_validation: Some(true),
            ..Default::default()
        })
        .complete(ctrl::reconcile::func(move |_ctx, req: Request| {
            let a = a.clone();
            async move {
                let now = Instant::now();
                a.lock().push(Run {
                    object: req.name,
                    shard: "all".into(),
                    start: now,
                    end: now,
                });
                Ok(Action::done())
            }
        }))
        .expect("controller");
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let created = Created::default();
    create(&client, n, &created).await;
    wait_reconciled(&audit, n).await;
    let (max_cached, max_bytes) = cached(&mgr).await;
    let (p50, p99) = latencies(&created, &audit);
    stop.cancel();
    let _ = run.await;
    Row {
        name: "unsharded (1 replica)".into(),
        max_cached,
        max_bytes,
        p50,
        p99,
    }
}

/// Objects moved when a third shard joins two.
async fn join(n: usize) -> (usize, usize) {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    create_objects(&client, n).await;
    let sharder = start_sharder(client.clone());
    let mut shards = vec![
        start_shard(
            client.clone(),
            "a",
            true,
            audit.clone(),
            Duration::ZERO,
            None,
        )
        .await,
        start_shard(
            client.clone(),
            "b",
            true,
            audit.clone(),
            Duration::ZERO,
            None,
        )
        .await,
    ];
    assert!(
        all_assigned_to(
            &client,
            &["a".into(), "b".into()],
            n,
            Duration::from_secs(120)
        )
        .await
    );
    let before = assignments(&client).await;
    shards.push(
        start_shard(
            client.clone(),
            "c",
            true,
            audit.clone(),
            Duration::ZERO,
            None,
        )
        .await,
    );
    tokio::time::sleep(SYNC * 2).await;
    let ids = ["a".to_string(), "b".to_string(), "c".to_string()];
    assert!(all_assigned_to(&client, &ids, n, Duration::from_secs(120)).await);
    let after = assignments(&client).await;
    let moved = before
        .iter()
        .filter(|(o, s)| after.get(*o) != Some(s))
        .count();
    for s in shards {
        s.stop().await;
    }
    sharder.stop().await;
    (moved, n)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SHARDING_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 20_000 } else { 100 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "sharding bench ({} mode): {n} ConfigMaps per row",
        if full { "full" } else { "quick" }
    );
    let base = rt.block_on(unsharded(n));
    let mut rows = vec![];
    for k in [1, 2, 4] {
        rows.push(rt.block_on(sharded(k, n)));
    }
    println!(
        "\n{:<24} {:>12} {:>12} {:>10} {:>12} {:>12} {:>10}",
        "replicas", "max cached", "max bytes", "vs 1/N", "p50", "p99", "p50 ratio"
    );
    for (k, r) in std::iter::once((1, &base)).chain([1usize, 2, 4].into_iter().zip(rows.iter())) {
        let share = r.max_bytes as f64 / base.max_bytes.max(1) as f64 * k as f64;
        let ratio = r.p50.as_secs_f64() / base.p50.as_secs_f64().max(1e-9);
        println!(
            "{:<24} {:>12} {:>12} {:>9.2}x {:>12} {:>12} {:>9.2}x",
            r.name,
            r.max_cached,
            r.max_bytes,
            share,
            ms(r.p50),
            ms(r.p99),
            ratio
        );
    }
    let (moved, total) = rt.block_on(join(n.min(2000)));
    println!(
        "\njoin 2 -> 3 shards: {moved} of {total} objects moved ({:.2} of 1/3; goal <= 1.2)",
        moved as f64 * 3.0 / total as f64
    );
}
