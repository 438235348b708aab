//! The work-queue table: scenarios S1..S6 and a memory column, every implementation side
//! by side in one process, interleaved, 5 repetitions, median/min/max and ratios.
//!
//! `cargo bench --bench workqueue` runs the full sizes (a few minutes). Run without
//! `--bench` (as `cargo test --all-targets` does) it uses tiny sizes and one repetition,
//! to prove the harness works in a few seconds.
//!
//! Implementations: ctrl `RateLimitingQueue` (metrics off / on), ctrl `PriorityQueue`
//! (metrics off / on, and triggers on: the trigger-keeping handle a controller's queue has
//! by default, every add stamped as a `Kind` source stamps it and every `get` taking the
//! key's set; `+triggers` against the plain row and `+metrics +triggers` against `+metrics`,
//! the configuration a controller's queue runs, are the triggers off / on comparisons), kube-runtime's `scheduler` (a single-consumer stream: one consumer
//! task in every scenario), a bare `Mutex<(VecDeque, HashSet)>` + `Notify` baseline, and
//! an unbounded tokio mpsc channel as the floor (no dedup). Every run gets a fresh 2-worker
//! multi-thread tokio runtime; keys are `default/obj-{i}` Strings built before the clock
//! starts.

#[path = "workqueue_support/impls.rs"]
mod impls;
#[path = "support/plot.rs"]
#[allow(dead_code)]
mod plot;
#[path = "support/table.rs"]
mod table;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use cap::Cap;
use futures::StreamExt;
use impls::{Bare, BenchQueue, Chan, WithTriggers, ctrl_priority, ctrl_queue};
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use rand::{Rng, SeedableRng};
use table::{Column, Row};
use tokio::time::Instant;

#[global_allocator]
static ALLOC: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Impl {
    Rlq,
    RlqMetrics,
    Pq,
    PqTriggers,
    PqMetrics,
    PqMetricsTriggers,
    Kube,
    Bare,
    Chan,
}

const IMPLS: [Impl; 9] = [
    Impl::Rlq,
    Impl::RlqMetrics,
    Impl::Pq,
    Impl::PqTriggers,
    Impl::PqMetrics,
    Impl::PqMetricsTriggers,
    Impl::Kube,
    Impl::Bare,
    Impl::Chan,
];

impl Impl {
    fn label(self) -> &'static str {
        match self {
            Impl::Rlq => "ctrl RateLimitingQueue",
            Impl::RlqMetrics => "ctrl RateLimitingQueue +metrics",
            Impl::Pq => "ctrl PriorityQueue",
            Impl::PqTriggers => "ctrl PriorityQueue +triggers",
            Impl::PqMetrics => "ctrl PriorityQueue +metrics",
            Impl::PqMetricsTriggers => "ctrl PriorityQueue +metrics +triggers",
            Impl::Kube => "kube-runtime 5 scheduler",
            Impl::Bare => "bare Mutex+HashSet+Notify",
            Impl::Chan => "tokio mpsc unbounded (floor)",
        }
    }
}

#[derive(Clone, Copy)]
enum Scenario {
    S1(usize),
    /// `yield_every`: how many adds the producer makes between yields (see [`cooperate`]).
    S2 {
        keys: usize,
        adds: usize,
        yield_every: usize,
    },
    S3(usize),
    S4(usize),
    S5(usize),
}

/// One run's result: wall time, CPU time, and the count the rate is computed from.
#[derive(Clone, Copy)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    count: usize,
    /// S4: how long the producer's adds took.
    adds: Duration,
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("default/obj-{i}")).collect()
}

/// CPU time of every thread of this process so far (ns precision, from schedstat).
fn cpu_time() -> Duration {
    let mut ns = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn delays(n: usize, horizon: Duration) -> Vec<Duration> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let max = horizon.as_micros() as u64;
    (0..n)
        .map(|_| Duration::from_micros(rng.random_range(0..=max)))
        .collect()
}

// ---- scenarios over the get/done protocol ----

/// Producers yield to the scheduler every [`YIELD_EVERY`] adds, as event handlers do
/// between watch events. Without it a tight producer loop keeps the tasks it wakes
/// (consumers, the timer) in its worker's non-stealable LIFO slot until it ends, for every
/// implementation alike.
async fn cooperate(i: usize) {
    if i > 0 && i.is_multiple_of(YIELD_EVERY.load(Ordering::Relaxed)) {
        tokio::task::yield_now().await;
    }
}

/// How many adds a producer makes between yields in the current run: 256 (tokio's own
/// cooperative budget is 128 operations per poll), except in the S2 variants that show how
/// S2 depends on it: its consumer runs once per yield and drains every key re-added since
/// (see docs/workqueue.md).
static YIELD_EVERY: AtomicUsize = AtomicUsize::new(DEFAULT_YIELD_EVERY);

/// The producers' yield interval of every scenario but the S2 variants.
const DEFAULT_YIELD_EVERY: usize = 256;

async fn s1<Q: BenchQueue>(q: Q, ks: Vec<String>) -> usize {
    let n = ks.len();
    let qp = q.clone();
    let prod = tokio::spawn(async move {
        for (i, k) in ks.into_iter().enumerate() {
            qp.add(k);
            cooperate(i).await;
        }
    });
    let qc = q.clone();
    let cons = tokio::spawn(async move {
        let mut c = 0;
        while c < n {
            match qc.get().await {
                Some(k) => {
                    qc.done(&k);
                    c += 1;
                }
                None => break,
            }
        }
        c
    });
    prod.await.expect("producer");
    let c = cons.await.expect("consumer");
    q.shut_down();
    c
}

/// The producer adds borrowed keys (`add_ref(&str)`), as Go passes its immutable strings:
/// a dedup hit then costs no allocation and no free in any implementation; a key is cloned
/// only when a queue stores it (or, for the channel and kube-runtime, which store every
/// add, on every add).
async fn s2<Q: BenchQueue>(q: Q, ks: Vec<String>, adds: usize) -> usize {
    let qp = q.clone();
    let prod = tokio::spawn(async move {
        for i in 0..adds {
            qp.add_ref(&ks[i % ks.len()]);
            cooperate(i).await;
        }
        qp.shut_down();
    });
    let qc = q.clone();
    let cons = tokio::spawn(async move {
        let mut handed_out = 0usize;
        while let Some(k) = qc.get().await {
            qc.done(&k);
            handed_out += 1;
        }
        handed_out
    });
    prod.await.expect("producer");
    let handed_out = cons.await.expect("consumer");
    if std::env::var_os("WORKQUEUE_BENCH_DEBUG").is_some() {
        eprintln!("  s2: the consumer got {handed_out} items for {adds} adds");
    }
    adds
}

async fn s3<Q: BenchQueue>(q: Q, ks: Vec<String>) -> usize {
    let n = ks.len();
    let processed = Arc::new(AtomicUsize::new(0));
    let chunk = n.div_ceil(4);
    let mut tasks = Vec::new();
    let mut ks = ks;
    for _ in 0..4 {
        let part: Vec<String> = ks.drain(..chunk.min(ks.len())).collect();
        let qp = q.clone();
        tasks.push(tokio::spawn(async move {
            for (i, k) in part.into_iter().enumerate() {
                qp.add(k);
                cooperate(i).await;
            }
        }));
    }
    for _ in 0..4 {
        let qc = q.clone();
        let processed = Arc::clone(&processed);
        tasks.push(tokio::spawn(async move {
            while let Some(k) = qc.get().await {
                qc.done(&k);
                if processed.fetch_add(1, Ordering::Relaxed) + 1 == n {
                    qc.shut_down();
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    processed.load(Ordering::Relaxed)
}

/// How long the last S4 producer took to make its 100,000 `add_after` calls (ns).
static S4_ADDS_NS: AtomicU64 = AtomicU64::new(0);

/// S4: every key is due at a fixed time `d` after the start of the run (the delay passed
/// is `d` minus the time already spent adding), so the 100 ms horizon is the same for
/// every implementation and "ms past the horizon" measures how late the last item is
/// handed out, not how long the producer took to make 100,000 calls (that is S1's job,
/// and it is printed next to the result as "adds").
async fn s4<Q: BenchQueue>(q: Q, ks: Vec<String>, ds: Vec<Duration>) -> usize {
    let n = ks.len();
    let qp = q.clone();
    let t0 = std::time::Instant::now();
    let debug = std::env::var_os("WORKQUEUE_BENCH_DEBUG").is_some();
    let prod = tokio::spawn(async move {
        for (i, (k, d)) in ks.into_iter().zip(ds).enumerate() {
            qp.add_after(k, d.saturating_sub(t0.elapsed()));
            cooperate(i).await;
        }
        S4_ADDS_NS.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if debug {
            eprintln!("  s4: producer done after {:?}", t0.elapsed());
        }
    });
    let qc = q.clone();
    let cons = tokio::spawn(async move {
        let mut c = 0;
        while c < n {
            match qc.get().await {
                Some(k) => {
                    qc.done(&k);
                    c += 1;
                    if debug && c.is_multiple_of((n / 10).max(1)) {
                        eprintln!("  s4: {c} processed at {:?}", t0.elapsed());
                    }
                }
                None => break,
            }
        }
        c
    });
    prod.await.expect("producer");
    let c = cons.await.expect("consumer");
    q.shut_down();
    c
}

/// S5's bookkeeping: how often `k` was handed out before, counting this time. Clones the
/// key only the first time (a clone per get would cost every implementation alike).
fn failed_before(failures: &mut HashMap<String, u32>, k: &str) -> u32 {
    match failures.get_mut(k) {
        Some(f) => {
            *f += 1;
            *f - 1
        }
        None => {
            failures.insert(k.to_owned(), 1);
            0
        }
    }
}

async fn s5<Q: BenchQueue>(q: Q, ks: Vec<String>) -> usize {
    let n = ks.len();
    for k in ks {
        q.add(k);
    }
    let mut failures: HashMap<String, u32> = HashMap::with_capacity(n);
    let mut finished = 0;
    while finished < n {
        let Some(k) = q.get().await else { break };
        if failed_before(&mut failures, &k) < 3 {
            q.done(&k);
            q.retry(k);
        } else {
            q.forget(&k);
            q.done(&k);
            finished += 1;
        }
    }
    q.shut_down();
    finished
}

async fn run_queue<Q: BenchQueue>(q: Q, sc: Scenario, ks: Vec<String>, ds: Vec<Duration>) -> usize {
    match sc {
        Scenario::S1(_) => s1(q, ks).await,
        Scenario::S2 { adds, .. } => s2(q, ks, adds).await,
        Scenario::S3(_) => s3(q, ks).await,
        Scenario::S4(_) => s4(q, ks, ds).await,
        Scenario::S5(_) => s5(q, ks).await,
    }
}

// ---- kube-runtime's scheduler: one stream, one consumer ----

async fn run_kube(sc: Scenario, ks: Vec<String>, ds: Vec<Duration>) -> usize {
    let (tx, rx) = futures::channel::mpsc::unbounded::<ScheduleRequest<String>>();
    let mut sched = Box::pin(scheduler(rx));
    match sc {
        Scenario::S1(_) | Scenario::S3(_) | Scenario::S4(_) => {
            let n = ks.len();
            let producers = if matches!(sc, Scenario::S3(_)) { 4 } else { 1 };
            let chunk = n.div_ceil(producers);
            let mut ks = ks;
            let mut ds = ds;
            let t0 = Instant::now();
            let mut prods = Vec::new();
            for _ in 0..producers {
                let part: Vec<String> = ks.drain(..chunk.min(ks.len())).collect();
                let dpart: Vec<Duration> = ds.drain(..chunk.min(ds.len())).collect();
                let tx = tx.clone();
                prods.push(tokio::spawn(async move {
                    for (i, k) in part.into_iter().enumerate() {
                        let d = dpart.get(i).copied().unwrap_or_default();
                        let _ = tx.unbounded_send(ScheduleRequest {
                            message: k,
                            run_at: t0 + d,
                        });
                        cooperate(i).await;
                    }
                    S4_ADDS_NS.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }));
            }
            let cons = tokio::spawn(async move {
                let mut c = 0;
                while c < n {
                    match sched.next().await {
                        Some(_k) => c += 1,
                        None => break,
                    }
                }
                c
            });
            for p in prods {
                p.await.expect("producer");
            }
            let c = cons.await.expect("consumer");
            drop(tx);
            c
        }
        Scenario::S2 { adds, .. } => {
            let prod = tokio::spawn(async move {
                for i in 0..adds {
                    let _ = tx.unbounded_send(ScheduleRequest {
                        message: ks[i % ks.len()].clone(),
                        run_at: Instant::now(),
                    });
                    cooperate(i).await;
                }
                // Everything scheduled before this is emitted before it.
                let _ = tx.unbounded_send(ScheduleRequest {
                    message: String::new(),
                    run_at: Instant::now() + Duration::from_millis(2),
                });
                tx
            });
            let cons = tokio::spawn(async move {
                while let Some(k) = sched.next().await {
                    if k.is_empty() {
                        break;
                    }
                }
            });
            let tx = prod.await.expect("producer");
            cons.await.expect("consumer");
            drop(tx);
            adds
        }
        Scenario::S5(_) => {
            let n = ks.len();
            for k in ks {
                let _ = tx.unbounded_send(ScheduleRequest {
                    message: k,
                    run_at: Instant::now(),
                });
            }
            let mut failures: HashMap<String, u32> = HashMap::with_capacity(n);
            let mut finished = 0;
            while finished < n {
                let Some(k) = sched.next().await else { break };
                let f = failed_before(&mut failures, &k);
                if f < 3 {
                    let backoff = Duration::from_millis(5) * 2u32.pow(f);
                    let _ = tx.unbounded_send(ScheduleRequest {
                        message: k,
                        run_at: Instant::now() + backoff,
                    });
                } else {
                    finished += 1;
                }
            }
            finished
        }
    }
}

fn scenario_inputs(sc: Scenario) -> (Vec<String>, Vec<Duration>) {
    match sc {
        Scenario::S1(n) | Scenario::S3(n) | Scenario::S5(n) => (keys(n), Vec::new()),
        Scenario::S2 { keys: k, .. } => (keys(k), Vec::new()),
        Scenario::S4(n) => (keys(n), delays(n, Duration::from_millis(100))),
    }
}

fn run(imp: Impl, sc: Scenario) -> Option<Sample> {
    let yield_every = match sc {
        Scenario::S2 { yield_every, .. } => yield_every,
        _ => DEFAULT_YIELD_EVERY,
    };
    YIELD_EVERY.store(yield_every, Ordering::Relaxed);
    let rt = runtime();
    let (ks, ds) = scenario_inputs(sc);
    let cpu0 = cpu_time();
    let start = std::time::Instant::now();
    let count = rt.block_on(async move {
        match imp {
            Impl::Rlq => run_queue(ctrl_queue(false), sc, ks, ds).await,
            Impl::RlqMetrics => run_queue(ctrl_queue(true), sc, ks, ds).await,
            Impl::Pq => run_queue(ctrl_priority(false), sc, ks, ds).await,
            Impl::PqTriggers => run_queue(WithTriggers::new(false), sc, ks, ds).await,
            Impl::PqMetricsTriggers => run_queue(WithTriggers::new(true), sc, ks, ds).await,
            Impl::PqMetrics => run_queue(ctrl_priority(true), sc, ks, ds).await,
            Impl::Bare => run_queue(Bare::new(), sc, ks, ds).await,
            Impl::Chan => run_queue(Chan::new(), sc, ks, ds).await,
            Impl::Kube => run_kube(sc, ks, ds).await,
        }
    });
    let wall = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu0);
    drop(rt);
    let adds = Duration::from_nanos(S4_ADDS_NS.swap(0, Ordering::Relaxed));
    Some(Sample {
        wall,
        cpu,
        count,
        adds,
    })
}

/// Bytes allocated to hold `n` distinct keys (keys included) in each implementation.
fn memory(imp: Impl, n: usize) -> usize {
    let rt = runtime();
    rt.block_on(async move {
        let m0 = ALLOC.allocated();
        let ks = keys(n);
        let held: Box<dyn std::any::Any + Send> = match imp {
            Impl::Rlq | Impl::RlqMetrics => {
                let q = ctrl_queue(imp == Impl::RlqMetrics);
                for k in ks {
                    q.add(k);
                }
                Box::new(q)
            }
            Impl::Pq | Impl::PqMetrics => {
                let q = ctrl_priority(imp == Impl::PqMetrics);
                for k in ks {
                    q.add(k);
                }
                Box::new(q)
            }
            Impl::Bare => {
                let q = Bare::new();
                for k in ks {
                    q.add(k);
                }
                Box::new(q)
            }
            Impl::PqTriggers | Impl::PqMetricsTriggers => {
                let q = WithTriggers::with_pool(n, imp == Impl::PqMetricsTriggers);
                for k in ks {
                    q.add(k);
                }
                Box::new(q)
            }
            Impl::Chan => {
                let q = Chan::new();
                for k in ks {
                    q.add(k);
                }
                Box::new(q)
            }
            Impl::Kube => {
                let (tx, rx) = futures::channel::mpsc::unbounded();
                let mut sched = Box::pin(scheduler(rx));
                let later = Instant::now() + Duration::from_secs(3600);
                for k in ks {
                    let _ = tx.unbounded_send(ScheduleRequest {
                        message: k,
                        run_at: later,
                    });
                }
                // One poll moves every request into the scheduler's own structures.
                let _ = futures::poll!(sched.next());
                Box::new((tx, sched))
            }
        };
        let used = ALLOC.allocated().saturating_sub(m0);
        drop(held);
        used
    })
}

/// S2's dedup hit alone: `add_ref` of an already queued key, in one thread, no consumer.
/// Against S2 it shows what the queue costs per add and what the consumer running on the
/// other worker (lock and cache-line hand-offs) adds to it.
fn print_hit_cost(nkeys: usize, adds: usize) {
    fn hits<Q: BenchQueue>(q: Q, ks: &[String], adds: usize) -> f64 {
        for k in ks {
            q.add_ref(k);
        }
        let t = std::time::Instant::now();
        for i in 0..adds {
            q.add_ref(std::hint::black_box(&ks[i % ks.len()]));
        }
        t.elapsed().as_nanos() as f64 / adds as f64
    }
    let ks = keys(nkeys);
    println!(
        "\nS2 dedup hit alone ({nkeys} queued keys, {adds} add_ref in one thread, no consumer)"
    );
    for (label, ns) in [
        (Impl::Rlq.label(), hits(ctrl_queue(false), &ks, adds)),
        (Impl::RlqMetrics.label(), hits(ctrl_queue(true), &ks, adds)),
        (Impl::Pq.label(), hits(ctrl_priority(false), &ks, adds)),
        (
            Impl::PqTriggers.label(),
            hits(WithTriggers::new(false), &ks, adds),
        ),
        (Impl::Bare.label(), hits(Bare::new(), &ks, adds)),
    ] {
        println!(
            "  {label:<32} {ns:>8.1} ns/add  = {:>6.1} M adds/s",
            1e3 / ns
        );
    }
}

/// Samples by implementation label, in repetition order.
type Samples = HashMap<&'static str, Vec<Sample>>;

/// One repetition of `sc`: every implementation once, in turn.
fn sample_once(imps: &[Impl], sc: Scenario, into: &mut Samples) {
    for &imp in imps {
        if let Some(s) = run(imp, sc) {
            into.entry(imp.label()).or_default().push(s);
        }
    }
}

fn ns_per_item(s: &Sample) -> f64 {
    s.wall.as_nanos() as f64 / s.count.max(1) as f64
}

/// S6's own line: per-item cost at the largest size over the smallest, one ratio per
/// repetition (sizes run back to back), median / min / max. The bar is ≤ 1.3×.
fn print_growth(sizes: &[usize], growth: Vec<(Impl, Vec<f64>)>) {
    let (Some(first), Some(last)) = (sizes.first(), sizes.last()) else {
        return;
    };
    if growth.iter().all(|(_, v)| v.is_empty()) {
        return;
    }
    println!(
        "\nS6 growth: ns/item at {last} keys / ns/item at {first} keys (per repetition; bar <= 1.3x)"
    );
    println!(
        "  {:<32} {:>10} {:>10} {:>10}",
        "implementation", "median", "min", "max"
    );
    for (imp, mut v) in growth {
        if v.is_empty() {
            continue;
        }
        let med = median(&mut v);
        println!(
            "  {:<32} {:>9.2}x {:>9.2}x {:>9.2}x",
            imp.label(),
            med,
            v[0],
            v[v.len() - 1]
        );
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Prints one scenario's rows with the work-queue table's ratio columns.
fn print_rows(title: &str, unit: &str, higher_is_better: bool, rows: &[Row]) {
    let to = |i: Impl| move |_: &str| Some(i.label().to_string());
    let (vs_bare, vs_kube) = (to(Impl::Bare), to(Impl::Kube));
    let metrics = |l: &str| {
        if l == Impl::RlqMetrics.label() {
            Some(Impl::Rlq.label().to_string())
        } else if l == Impl::PqMetrics.label() {
            Some(Impl::Pq.label().to_string())
        } else {
            None
        }
    };
    let triggers = |l: &str| {
        if l == Impl::PqTriggers.label() {
            Some(Impl::Pq.label().to_string())
        } else if l == Impl::PqMetricsTriggers.label() {
            Some(Impl::PqMetrics.label().to_string())
        } else {
            None
        }
    };
    let columns = [
        Column {
            header: "vs bare",
            base: &vs_bare,
        },
        Column {
            header: "vs kube",
            base: &vs_kube,
        },
        Column {
            header: "metrics",
            base: &metrics,
        },
        Column {
            header: "triggers",
            base: &triggers,
        },
    ];
    table::print(title, unit, higher_is_better, rows, &columns);
}

/// What to run: `cargo bench --bench workqueue -- [FILTER] [--reps N] [--impl TEXT]`.
/// FILTER keeps the scenarios whose title contains it (`S4`, `S6`, `Memory`); `--impl`
/// keeps the implementations whose label contains TEXT (`ctrl`, `bare`), or, with a
/// leading `=`, the one whose label is the rest (`=ctrl RateLimitingQueue`). The environment
/// variables `WORKQUEUE_BENCH_ONLY`, `WORKQUEUE_BENCH_REPS` and `WORKQUEUE_BENCH_IMPL` do
/// the same.
struct Args {
    full: bool,
    reps: usize,
    only: Option<String>,
    imps: Vec<Impl>,
}

fn args() -> Args {
    let mut full = false;
    let mut reps = std::env::var("WORKQUEUE_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let mut only = std::env::var("WORKQUEUE_BENCH_ONLY").ok();
    let mut imp = std::env::var("WORKQUEUE_BENCH_IMPL").ok();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bench" => full = true,
            "--reps" => reps = it.next().and_then(|v| v.parse().ok()),
            "--impl" => imp = it.next(),
            s if !s.starts_with('-') => only = Some(s.to_string()),
            _ => {}
        }
    }
    let imps = IMPLS
        .into_iter()
        .filter(|i| {
            imp.as_deref().is_none_or(|t| match t.strip_prefix('=') {
                Some(exact) => i.label() == exact,
                None => i.label().contains(t),
            })
        })
        .collect();
    Args {
        full,
        reps: reps.unwrap_or(if full { 5 } else { 1 }).max(1),
        only,
        imps,
    }
}

fn main() {
    let Args {
        full,
        reps,
        only,
        imps,
    } = args();
    let (n1, s2_keys, s2_adds, n3, n4, n5, s6, nmem) = if full {
        (
            1_000_000,
            100,
            1_000_000,
            1_000_000,
            100_000,
            10_000,
            vec![100_000, 1_000_000, 4_000_000],
            1_000_000,
        )
    } else {
        (
            2_000,
            100,
            20_000,
            2_000,
            1_000,
            100,
            vec![1_000, 4_000],
            10_000,
        )
    };
    println!(
        "ctrl work-queue table ({} mode: {} repetition(s), interleaved; 2-worker tokio runtime per run)",
        if full { "full" } else { "quick" },
        reps
    );
    println!(
        "ratios: 'vs bare'/'vs kube' > 1 means ctrl's row is better; 'metrics' / 'triggers' = on vs off"
    );

    let mut scenarios: Vec<(String, Scenario)> = vec![
        (
            format!("S1 1 producer / 1 consumer, {n1} distinct keys (M items/s)"),
            Scenario::S1(n1),
        ),
        (
            format!("S2 dedup: {s2_keys} keys, {s2_adds} adds, 1 consumer draining (M adds/s)"),
            Scenario::S2 {
                keys: s2_keys,
                adds: s2_adds,
                yield_every: DEFAULT_YIELD_EVERY,
            },
        ),
        (
            format!("S3 4 producers / 4 consumers, {n3} distinct keys (M items/s)"),
            Scenario::S3(n3),
        ),
        (
            format!("S4 {n4} keys add_after uniform [0,100ms]: ms past the 100 ms horizon"),
            Scenario::S4(n4),
        ),
        (
            format!("S5 {n5} keys x 3 rate-limited failures (5 ms exp. backoff): total ms"),
            Scenario::S5(n5),
        ),
    ];
    // S2's rate is set by how often its producer yields (the consumer drains once per
    // yield): the same scenario with rarer yields, for every implementation alike.
    for yield_every in [1024, 4096] {
        scenarios.push((
            format!(
                "S2 dedup, the producer yielding every {yield_every} adds, not {DEFAULT_YIELD_EVERY} (M adds/s)"
            ),
            Scenario::S2 {
                keys: s2_keys,
                adds: s2_adds,
                yield_every,
            },
        ));
    }
    for &n in &s6 {
        scenarios.push((
            format!("S6 scaling: S1 at {n} keys (ns per item)"),
            Scenario::S1(n),
        ));
    }

    let wanted = |title: &str| only.as_deref().is_none_or(|o| title.contains(o));
    // S6's sizes are interleaved within each repetition, so that a change of load on the
    // shared machine hits every size alike; the growth ratio is then taken per repetition.
    let mut pre: HashMap<String, Samples> = HashMap::new();
    for _ in 0..reps {
        for (title, sc) in scenarios.iter().filter(|(t, _)| t.starts_with("S6")) {
            if wanted(title) {
                let into = pre.entry(title.clone()).or_default();
                sample_once(&imps, *sc, into);
            }
        }
    }
    let s6_ns = |title: &str, imp: Impl| -> Vec<f64> {
        pre.get(title)
            .and_then(|m| m.get(imp.label()))
            .map(|v| v.iter().map(ns_per_item).collect())
            .unwrap_or_default()
    };
    let s6_growth: Vec<(Impl, Vec<f64>)> = match (
        scenarios.iter().find(|(t, _)| t.starts_with("S6")),
        scenarios.last(),
    ) {
        (Some((first, _)), Some((last, _))) if first != last => imps
            .iter()
            .map(|&imp| {
                let (a, b) = (s6_ns(first, imp), s6_ns(last, imp));
                (imp, a.iter().zip(&b).map(|(a, b)| b / a).collect())
            })
            .collect(),
        _ => Vec::new(),
    };

    let mut panels = Vec::new();
    for (title, sc) in &scenarios {
        if !wanted(title) {
            continue;
        }
        let samples = match pre.remove(title) {
            Some(s) => s,
            None => {
                let mut samples = Samples::new();
                for _ in 0..reps {
                    sample_once(&imps, *sc, &mut samples);
                }
                samples
            }
        };
        let is_s6 = title.starts_with("S6");
        let mut rows = Vec::new();
        for &imp in &imps {
            let Some(v) = samples.get(imp.label()) else {
                continue;
            };
            let metric = |s: &Sample| -> f64 {
                match sc {
                    _ if is_s6 => ns_per_item(s),
                    Scenario::S1(_) | Scenario::S3(_) => {
                        s.count as f64 / s.wall.as_secs_f64() / 1e6
                    }
                    Scenario::S2 { adds, .. } => *adds as f64 / s.wall.as_secs_f64() / 1e6,
                    Scenario::S4(_) => (s.wall.as_secs_f64() * 1e3 - 100.0).max(0.0),
                    Scenario::S5(_) => s.wall.as_secs_f64() * 1e3,
                }
            };
            let vals: Vec<f64> = v.iter().map(metric).collect();
            let mut cpus: Vec<f64> = v.iter().map(|s| s.cpu.as_secs_f64() * 1e3).collect();
            let extra = match sc {
                Scenario::S4(_) => {
                    let mut adds: Vec<f64> = v.iter().map(|s| s.adds.as_secs_f64() * 1e3).collect();
                    format!(
                        "CPU {:.0} ms, adds {:.0} ms (medians)",
                        median(&mut cpus),
                        median(&mut adds)
                    )
                }
                Scenario::S3(_) if imp == Impl::Kube => "1 consumer (one stream)".into(),
                _ => String::new(),
            };
            rows.push(Row::from_values(imp.label(), vals, extra));
        }
        let higher =
            matches!(sc, Scenario::S1(_) | Scenario::S2 { .. } | Scenario::S3(_)) && !is_s6;
        let unit = if is_s6 {
            "ns/item"
        } else {
            match sc {
                Scenario::S1(_) | Scenario::S3(_) => "M items/s",
                Scenario::S2 { .. } => "M adds/s",
                _ => "ms",
            }
        };
        print_rows(title, unit, higher, &rows);
        panels.push(plot::Panel {
            title: format!("{} ({unit})", title.split(" (").next().unwrap_or(title)),
            bars: rows.iter().map(|r| (r.label.clone(), r.med)).collect(),
        });
    }
    plot::bars(
        "workqueue.svg",
        &format!(
            "ctrl work-queue table, medians ({} mode)",
            if full { "full" } else { "quick" }
        ),
        2,
        &panels,
    );
    print_growth(&s6, s6_growth);
    if wanted("S2") {
        print_hit_cost(s2_keys, s2_adds * 10);
    }

    if only.as_deref().is_some_and(|o| !"Memory".contains(o)) {
        return;
    }
    // Memory for nmem distinct keys held (keys included), median of reps.
    let mut rows = Vec::new();
    for &imp in &imps {
        let v: Vec<f64> = (0..reps.min(3))
            .map(|_| memory(imp, nmem) as f64 / 1e6)
            .collect();
        rows.push(Row::from_values(imp.label(), v, String::new()));
    }
    print_rows(
        &format!("Memory holding {nmem} distinct keys, keys included (MB)"),
        "MB",
        false,
        &rows,
    );
}
