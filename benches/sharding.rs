//! Sharding bench: one unsharded replica and 1, 2 and 4 shards of ring `test`
//! (ConfigMaps of one namespace) on ctrl-envtest, in the same run, then a join and a
//! crash. The goals, each printed with its verdict:
//!
//! - cache memory per shard <= 1/N + 10 % of the unsharded replica's: the heap
//!   (`cap`, what the global allocator holds) of a fresh cache selecting one shard's
//!   objects once synced, for each shard after its fleet stopped (so nothing else
//!   allocates meanwhile), against the same for a cache of every object. Printed as
//!   the largest shard's share times N (imbalance of the hash ring included) and the
//!   mean shard's (the cost per object of being sharded: the shard label);
//! - create -> first reconcile p50 / p99 within 1.2x of unsharded, with the sharder's
//!   webhook assigning objects as they are created (the latency counts from the moment
//!   the create returned, so the webhook's own time is in the create rate);
//! - a join of a third shard to two moves <= 1.2 x 1/3 of the objects;
//! - after a shard crashes (its lease is not released), every one of its objects is
//!   reconciled by a live shard within lease duration + sync period (15 s lease, the
//!   tests' 3 s sync).
//!
//! The ConfigMaps carry 2 labels, 1 annotation and 3 data keys, like the cache bench's.
//! `cargo bench --bench sharding` runs 20,000 objects (`SHARDING_BENCH_OBJECTS` to
//! change it); without `--bench` (as `cargo test --all-targets` runs it) a quick mode
//! runs 300.

#[path = "../tests/sharding_support/mod.rs"]
mod support;

#[path = "support/objects.rs"]
mod objects;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use cap::Cap;
use ctrl::cache::{self, Cache};
use ctrl::prelude::*;
use ctrl::sharding::Shard;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use support::*;
use tokio::time::Instant;

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// The sharder's full-sync period in the latency rows (upstream's default): only the
/// webhook assigns while objects are created, as in production.
const ROW_SYNC: Duration = Duration::from_secs(300);

/// Object name -> when its create returned.
type Created = Arc<Mutex<HashMap<String, Instant>>>;

/// One row of the table.
struct Row {
    name: String,
    shards: usize,
    /// Heap of the largest shard's cache, and the mean over the shards.
    max_heap: usize,
    mean_heap: usize,
    max_objects: usize,
    /// Objects in each shard's cache.
    spread: Vec<usize>,
    p50: Duration,
    p99: Duration,
    creates_per_sec: f64,
}

fn object(i: usize) -> ConfigMap {
    objects::config_map(format!("cm-{i}"), i)
}

/// Creates `n` ConfigMaps, 4 at a time, recording when each create returned; returns
/// creates per second.
async fn create(client: &kube::Client, n: usize, created: &Created) -> f64 {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let t = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = object(i);
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
                created
                    .lock()
                    .insert(cm.metadata.name.unwrap_or_default(), Instant::now());
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<()>>()
        .await;
    n as f64 / t.elapsed().as_secs_f64()
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

/// What the global allocator holds once freed buffers settled.
async fn allocated() -> usize {
    tokio::time::sleep(Duration::from_millis(300)).await;
    ALLOC.allocated()
}

/// Objects and heap bytes of a fresh ConfigMap cache, synced, selecting `shard`'s
/// objects (every object without one).
async fn probe(client: &kube::Client, shard: Option<&Shard>) -> (usize, usize) {
    let before = allocated().await;
    let opts = cache::Options::default();
    let opts = match shard {
        Some(s) => s.select::<ConfigMap>(opts),
        None => opts,
    };
    let cache = Cache::new(client.clone(), opts);
    let informer = cache.get_informer::<ConfigMap>();
    let ctx = CancellationToken::new();
    let run = {
        let (c, x) = (cache.clone(), ctx.clone());
        tokio::spawn(async move { c.start(x).await })
    };
    assert!(cache.wait_for_cache_sync(ctx.clone()).await, "probe synced");
    let bytes = allocated().await.saturating_sub(before);
    let objects = informer.store().len();
    ctx.cancel();
    let _ = run.await;
    (objects, bytes)
}

/// Waits until `n` distinct objects have been reconciled.
async fn wait_reconciled(audit: &Audit, n: usize) {
    let done = eventually(Duration::from_secs(300), || async {
        let runs = audit.lock();
        runs.iter().map(|r| &r.object).collect::<HashSet<_>>().len() >= n
    })
    .await;
    assert!(done, "every object reconciled");
}

/// Starts shards `s-0..k` reconciling into `audit`; waits until they hold their leases.
async fn start_shards(client: &kube::Client, k: usize, audit: &Audit) -> Vec<Running> {
    let mut shards = Vec::new();
    for i in 0..k {
        // controller-runtime's default lease timings: the rows measure steady work,
        // not how fast a lost lease is noticed.
        let shard = Shard::new(RING, format!("s-{i}"), NS);
        shards
            .push(start_shard_as(client.clone(), shard, audit.clone(), Duration::ZERO, None).await);
    }
    let ids: Vec<&str> = shards.iter().map(|s| s.id.as_str()).collect();
    assert!(leases_held(client, &ids).await);
    shards
}

/// A sharded row: `k` shards, `n` objects.
async fn sharded(k: usize, n: usize) -> Row {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let sharder = start_sharder_with(client.clone(), ROW_SYNC, true);
    let shards = start_shards(&client, k, &audit).await;
    let ids: Vec<String> = shards.iter().map(|s| s.id.clone()).collect();
    tokio::time::sleep(Duration::from_secs(1)).await; // the webhook is registered
    let created = Created::default();
    let creates_per_sec = create(&client, n, &created).await;
    wait_reconciled(&audit, n).await;
    let (p50, p99) = latencies(&created, &audit);
    for s in shards.iter().filter(|s| !s.is_running()) {
        println!(
            "note: shard {} stopped during the row (it lost its lease)",
            s.id
        );
    }
    assert!(all_assigned_to(&client, &ids, n, Duration::from_secs(5)).await);
    let live = spread(&client, &ids).await;
    // The sharder stops first: a shard that stops releases its lease, is Dead at once,
    // and a sharder still running would move its objects to the shards still running
    // (`tests/integration/sharding.rs`), so the caches probed below would not hold the
    // row's spread.
    sharder.stop().await;
    for s in shards {
        s.stop().await;
    }
    let (mut max_heap, mut sum, mut probed) = (0, 0, Vec::new());
    for id in &ids {
        let (objects, bytes) = probe(&client, Some(&Shard::new(RING, id, NS))).await;
        max_heap = max_heap.max(bytes);
        probed.push(objects);
        sum += bytes;
    }
    assert_eq!(probed, live, "the probes hold the row's spread");
    Row {
        name: format!("{k} shard(s)"),
        shards: k,
        max_heap,
        mean_heap: sum / k,
        max_objects: live.iter().copied().max().unwrap_or_default(),
        spread: live,
        p50,
        p99,
        creates_per_sec,
    }
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
    let creates_per_sec = create(&client, n, &created).await;
    wait_reconciled(&audit, n).await;
    let (p50, p99) = latencies(&created, &audit);
    stop.cancel();
    let _ = run.await;
    let (max_objects, max_heap) = probe(&client, None).await;
    Row {
        name: "unsharded (1 replica)".into(),
        shards: 1,
        max_heap,
        mean_heap: max_heap,
        max_objects,
        spread: vec![max_objects],
        p50,
        p99,
        creates_per_sec,
    }
}

/// What the membership changes showed.
struct Membership {
    total: usize,
    /// Objects that changed shard when `c` joined `a` and `b`.
    moved: usize,
    /// Objects `c` held when it crashed.
    orphaned: usize,
    /// From the crash until the last of them was reconciled by a live shard.
    takeover: Duration,
    /// From the crash until the sharder held the crashed shard's lease (it is Dead).
    dead: Duration,
}

/// Waits until the sharder holds lease `id` (up to 60 s); returns when it was seen.
async fn taken_over(client: &kube::Client, id: &str) -> Instant {
    let api: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client.clone(), NS);
    eventually(Duration::from_secs(60), || async {
        let lease = api.get(id).await.expect("lease");
        let holder = lease.spec.and_then(|s| s.holder_identity);
        holder.as_deref() == Some(ctrl::sharding::IDENTITY_SHARDER)
    })
    .await;
    Instant::now()
}

/// Waits until every object of `objects` has been reconciled since `since` by a
/// shard other than `gone`; returns when the last one was.
async fn reconciled_elsewhere(
    audit: &Audit,
    objects: &HashSet<String>,
    gone: &str,
    since: Instant,
) -> Option<Instant> {
    let mut first: HashMap<String, Instant> = HashMap::new();
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        {
            let runs = audit.lock();
            for r in &runs[seen..] {
                if r.shard != gone && r.start >= since && objects.contains(&r.object) {
                    first.entry(r.object.clone()).or_insert(r.start);
                }
            }
            seen = runs.len();
        }
        if first.len() == objects.len() {
            return first.values().max().copied();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Two shards, a third joins (objects moved), then it crashes (takeover time).
async fn join_and_crash(n: usize) -> Membership {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let created = Created::default();
    create(&client, n, &created).await;
    let sharder = start_sharder_with_webhook(client.clone());
    let shards = start_shards(&client, 2, &audit).await;
    let ab = ["s-0".to_string(), "s-1".to_string()];
    assert!(wait_settled(&client, &ab, n, Duration::from_secs(300)).await);
    let before = assignments(&client).await;
    // controller-runtime's lease timings, not released on stop: a crash. (The tests'
    // 2 s leases are lost under this load: the in-process API server serves 20k-object
    // lists on the same two threads.)
    let lease = ctrl::leaderelection::ElectorConfig {
        release_on_cancel: false,
        ..default_lease()
    };
    let c = Shard::new(RING, "c", NS).with_lease_config(lease);
    let c = start_shard_as(client.clone(), c, audit.clone(), Duration::ZERO, None).await;
    // Every object on the shard the ring of three picks, no drain pending: the join has
    // settled (every object labelled with one of the three is true before it began).
    let abc = ["s-0".to_string(), "s-1".to_string(), "c".to_string()];
    assert!(wait_settled(&client, &abc, n, Duration::from_secs(300)).await);
    let after = assignments(&client).await;
    let moved = before
        .iter()
        .filter(|(o, s)| after.get(*o) != Some(s))
        .count();
    let on_c: HashSet<String> = after
        .iter()
        .filter(|(_, s)| *s == "c")
        .map(|(o, _)| o.clone())
        .collect();
    wait_reconciled(&audit, n).await;
    c.stop().await; // no release: a crash as far as the sharder can tell
    let crashed = Instant::now();
    let (dead, last) = tokio::join!(
        taken_over(&client, "c"),
        reconciled_elsewhere(&audit, &on_c, "c", crashed)
    );
    let takeover = last.map_or(Duration::MAX, |t| t - crashed);
    for s in shards {
        s.stop().await;
    }
    sharder.stop().await;
    Membership {
        total: n,
        moved,
        orphaned: on_c.len(),
        takeover,
        dead: dead - crashed,
    }
}

/// controller-runtime's default lease timings (15 s / 10 s / 2 s), released on stop.
fn default_lease() -> ctrl::leaderelection::ElectorConfig {
    ctrl::leaderelection::ElectorConfig {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        release_on_cancel: true,
        name: String::new(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn print_rows(base: &Row, rows: &[Row]) {
    println!(
        "\n{:<22} {:>8} {:>12} {:>9} {:>9} {:>10} {:>10} {:>7} {:>9}",
        "replicas",
        "objects",
        "heap (max)",
        "max x N",
        "mean x N",
        "p50",
        "p99",
        "p50 x",
        "creates/s"
    );
    for r in std::iter::once(base).chain(rows) {
        let k = r.shards as f64;
        let b = base.max_heap.max(1) as f64;
        println!(
            "{:<22} {:>8} {:>12} {:>8.2}x {:>8.2}x {:>10} {:>10} {:>6.2}x {:>9.0}",
            r.name,
            r.max_objects,
            r.max_heap,
            r.max_heap as f64 / b * k,
            r.mean_heap as f64 / b * k,
            ms(r.p50),
            ms(r.p99),
            r.p50.as_secs_f64() / base.p50.as_secs_f64().max(1e-9),
            r.creates_per_sec
        );
    }
    for r in rows {
        let k = r.shards as f64;
        let share = r.max_heap as f64 / base.max_heap.max(1) as f64;
        let latency = r.p50.as_secs_f64() / base.p50.as_secs_f64().max(1e-9);
        println!("{}: objects per shard {:?}", r.name, r.spread);
        println!(
            "{}: largest shard's cache {:.3} of unsharded (goal <= 1/N + 10 % = {:.3}): {}; p50 {:.2}x (goal <= 1.2x): {}",
            r.name,
            share,
            1.0 / k + 0.1,
            verdict(share <= 1.0 / k + 0.1),
            latency,
            verdict(latency <= 1.2)
        );
    }
}

fn main() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt().with_env_filter(filter).init(); // RUST_LOG to see the fleet's logs
    }
    let full = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("SHARDING_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 20_000 } else { 300 });
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
    let rows: Vec<Row> = [1, 2, 4].map(|k| rt.block_on(sharded(k, n))).into();
    print_rows(&base, &rows);
    let m = rt.block_on(join_and_crash(n));
    let share = m.moved as f64 * 3.0 / m.total as f64;
    println!(
        "join 2 -> 3 shards: {} of {} objects moved, {share:.2} x 1/3 (goal <= 1.2): {}",
        m.moved,
        m.total,
        verdict(share <= 1.2)
    );
    let lease = default_lease().lease_duration;
    let bound = lease + SYNC;
    println!(
        "crash of 1 of 3 shards: lease taken over (shard dead) after {}, its {} objects reconciled elsewhere after {} (goal <= lease {} + sync {} = {}): {}",
        ms(m.dead),
        m.orphaned,
        ms(m.takeover),
        ms(lease),
        ms(SYNC),
        ms(bound),
        verdict(m.takeover <= bound)
    );
}
