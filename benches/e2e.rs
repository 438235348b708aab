//! End to end, through the API server: one in-process ctrl-envtest holding N custom
//! objects (`Widget`, a CRD with a status subresource), and three rows doing the same
//! work on it in one run, interleaved (each repetition starts with the next row in turn; at
//! each size every repetition of (a) runs before the first of (b)):
//!
//! - **ctrl**: a `Manager` with one controller from the `ControllerBuilder` (`for_::<Widget>()`),
//!   whose reconciler reads its object through the manager's (cached) client;
//! - **kube-runtime**: `kube::runtime::Controller` on the same type, whose reconciler gets the
//!   object from its reflector store;
//! - **floor**: a bare kube `watcher` decoding the same stream into a `Vec` (no queue, no
//!   reconciler).
//!
//! Scenarios: (a) start → every object reconciled once; (b) the same with one status patch
//! per object (a reconcile that sees its own status skips the patch, as a real one would);
//! (c) steady churn: U spec updates/s through the API for D seconds, latency from each
//! update's response to the start of a reconcile that sees that generation (or a later
//! one); (d) heap held per object once (a) is done at the largest N (the global
//! allocator's count, `cap`, before start and after every object was reconciled:
//! the part of RSS the row owns, free of the allocator's retained pages).
//!
//! Every run prints a line of its own (time, the process's CPU, the most heap it held at once
//! over its start, the process's peak RSS, and the server's count of Widget lists, watches and
//! watchers dropped for falling behind: relists and watch restarts show there), and each table
//! its spread (max/min over the repetitions); a goal whose ratio the spread reaches across is
//! reported "within noise". Populating the server prints its heap per stored object against the
//! objects' JSON size. mimalloc keeps the pages it frees for the whole run (see
//! `keep_freed_pages`), so that no row pays for faulting in what the row before it freed.
//!
//! `cargo bench --bench e2e` runs N = 1,000 / 10,000 / 100,000, 3 repetitions, churn at
//! 1,000 and 5,000 updates/s for 30 s over 10,000 objects. Without `--bench` (as
//! `cargo test --all-targets` runs it) a quick mode uses 50 objects and 1 s of churn.
//! Knobs: `CTRL_BENCH_E2E_SIZES=1000,10000`, `CTRL_BENCH_E2E_REPS`, `CTRL_BENCH_E2E_RATES`,
//! `CTRL_BENCH_E2E_CHURN_SECS`, `CTRL_BENCH_E2E_CHURN_OBJECTS`, `CTRL_BENCH_E2E_CONCURRENCY`
//! (workers of both controllers, default 16); `CTRL_BENCH_E2E_RATES=0` skips the churn;
//! `CTRL_BENCH_E2E_ROWS=ctrl` runs (a) and (b) for the rows whose label contains it only;
//! `CTRL_BENCH_E2E_WARMUP=0` skips the uncounted (a) run of each row before a size's (a)
//! repetitions and the uncounted (b) run before its (b) repetitions (on in the full run, off
//! past `PATCH_MAX`); `CTRL_BENCH_E2E_PATCH=0` runs (a)
//! without (b).
//! `CTRL_BENCH_E2E_SIZES=1000000` (never in the default run) holds a million objects and runs (a)
//! only, not (b) (see `PATCH_MAX`). Charts go
//! to `target/bench-plots/`; `docs/benchmarks.md` shows the latest run.

#[path = "support/heap.rs"]
mod heap;
#[path = "support/plot.rs"]
mod plot;
#[path = "support/process.rs"]
mod process;
#[path = "support/table.rs"]
mod table;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cap::Cap;
use ctrl::ControllerBuilder;
use ctrl::Reader;
use ctrl::controller;
use ctrl::manager::{Manager, Options};
use ctrl::reconcile::{self, Action, Request};
use ctrl_envtest::{Environment, WatchStats};
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller as kc;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResource, CustomResourceExt};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use table::{Column, Row};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// mimalloc for every row: with glibc's allocator the heap the in-process server's history
/// fills fragments malloc's free lists, and a row's time then depended on how many runs came
/// before it (ctrl's first run at 100,000 objects 1.7 CPU-s, its third 5.5; docs/benchmarks.md).
#[global_allocator]
static ALLOC: Cap<mimalloc::MiMalloc> = Cap::new(mimalloc::MiMalloc, usize::MAX);

/// mimalloc's option for how long it waits before handing freed pages back to the kernel
/// (10 ms by default; -1: never).
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// Runs the bench again as a child process with mimalloc told never to hand freed pages back
/// to the kernel (mimalloc reads its options from the environment once, before `main`), unless
/// [`PURGE_DELAY`] is set already, and exits with the child's status. By default mimalloc
/// returns pages 10 ms after they are freed, and the next row to need memory faults them in
/// again, each zeroed by the kernel (on this VM a quarter of the floor's samples were
/// `clear_page_erms`): a row that ran after one freeing hundreds of MiB (kube-runtime's) paid
/// for its predecessor, and ctrl's repetitions at 100,000 objects differed by 1.2x-1.4x with
/// the code unchanged (docs/benchmarks.md). Every row runs with the same setting. The resident
/// set then keeps what earlier rows held, so a row's memory is read from [`ALLOC`]'s count
/// (sampled for its peak during the run), not from the resident set.
fn keep_freed_pages() {
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("the bench's own path");
    let status = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(PURGE_DELAY, "-1")
        .status()
        .expect("the bench runs again as a child");
    std::process::exit(status.code().unwrap_or(1));
}

const NS: &str = "default";

/// The bench's custom resource.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "bench.ctrl.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// The object's number (its index in the probe).
    pub index: usize,
    /// What churn updates.
    pub value: u64,
    /// Some payload, as real objects carry.
    pub image: String,
    /// More payload.
    pub replicas: u32,
}

/// What the (b) reconcile writes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    /// The run that patched it.
    pub run: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Imp {
    Ctrl,
    Kube,
    Floor,
}

impl Imp {
    fn label(self) -> &'static str {
        match self {
            Imp::Ctrl => "ctrl Manager + Builder",
            Imp::Kube => "kube-runtime Controller",
            Imp::Floor => "floor: bare watcher",
        }
    }
}

/// What every row reports to: which objects were reconciled in this run, and (in churn)
/// when each reconcile of which generation started.
struct Probe {
    run: u64,
    flags: Vec<AtomicBool>,
    done: AtomicUsize,
    /// Reconciles run (every call, not only each object's first): more than N in (a) means
    /// objects were reconciled again (a relist, a requeue, the row's own status event).
    calls: AtomicUsize,
    all: Notify,
    starts: Option<Mutex<Vec<(usize, i64, Instant)>>>,
}

impl Probe {
    fn new(run: u64, n: usize, churn: bool) -> Arc<Probe> {
        Arc::new(Probe {
            run,
            flags: (0..n).map(|_| AtomicBool::new(false)).collect(),
            done: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            all: Notify::new(),
            starts: churn.then(|| Mutex::new(Vec::new())),
        })
    }

    fn started(&self, w: &Widget, at: Instant) {
        if let Some(s) = &self.starts {
            let generation = w.metadata.generation.unwrap_or_default();
            s.lock().push((w.spec.index, generation, at));
        }
    }

    fn reconciled(&self, w: &Widget) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let Some(f) = self.flags.get(w.spec.index) else {
            return;
        };
        if !f.swap(true, Ordering::AcqRel)
            && self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.flags.len()
        {
            self.all.notify_one();
        }
    }

    async fn wait_all(&self) {
        let deadline = Duration::from_secs(900);
        if self.flags.is_empty() || self.done.load(Ordering::Acquire) == self.flags.len() {
            return;
        }
        tokio::time::timeout(deadline, self.all.notified())
            .await
            .expect("every object reconciled within 15 minutes");
    }

    /// Whether `w` still needs this run's status patch.
    fn needs_patch(&self, w: &Widget) -> bool {
        w.status.as_ref().is_none_or(|s| s.run != self.run)
    }
}

fn status_patch(run: u64) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "status": { "run": run } }))
}

/// The reconcile body all controller rows share: record, patch if asked, count.
async fn work(
    probe: &Probe,
    w: &Widget,
    api: &Api<Widget>,
    patch: bool,
) -> Result<(), kube::Error> {
    if patch && probe.needs_patch(w) {
        let name = w.metadata.name.as_deref().unwrap_or_default();
        api.patch_status(name, &PatchParams::default(), &status_patch(probe.run))
            .await?;
    }
    probe.reconciled(w);
    Ok(())
}

/// A started row and how to stop it.
struct Running {
    ctx: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.ctx.cancel();
        let _ = self.task.await;
    }
}

/// Runtime knobs shared by every run.
#[derive(Clone, Copy)]
struct Knobs {
    concurrency: usize,
}

async fn start_ctrl(env: &Environment, probe: Arc<Probe>, patch: bool, k: Knobs) -> Running {
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(env.client(), opts).expect("manager");
    let name = format!("widget-{}", probe.run);
    // One shared context, as kube-runtime's row has: a reconcile clones one `Arc`, not a
    // client and an `Api` (each a `tower` buffer handle: ~6 % of the row's CPU at 100,000).
    let shared = Arc::new((
        mgr.client(),
        Api::<Widget>::namespaced(env.client(), NS),
        probe,
    ));
    let r = reconcile::func(move |_ctx, req: Request| {
        let shared = shared.clone();
        async move {
            let (client, api, probe) = &*shared;
            let at = Instant::now();
            let w = match client.get::<Widget>(&req.namespace, &req.name).await {
                Ok(w) => w,
                Err(e) if e.is_not_found() => return Ok(Action::done()),
                Err(e) => return Err(reconcile::Error::new(e)),
            };
            probe.started(&w, at);
            work(probe, &w, api, patch)
                .await
                .map_err(reconcile::Error::new)?;
            Ok(Action::done())
        }
    });
    ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .named(name)
        .with_options(controller::Options {
            max_concurrent_reconciles: k.concurrency,
            skip_name_validation: Some(true),
            ..Default::default()
        })
        .complete(r)
        .expect("controller");
    let ctx = CancellationToken::new();
    let c = ctx.clone();
    let task = tokio::spawn(async move {
        mgr.start(c).await.expect("manager stops cleanly");
    });
    Running { ctx, task }
}

fn start_kube(env: &Environment, probe: Arc<Probe>, patch: bool, k: Knobs) -> Running {
    let api: Api<Widget> = Api::namespaced(env.client(), NS);
    let ctx = CancellationToken::new();
    let cfg = kc::Config::default().concurrency(k.concurrency.min(u16::MAX as usize) as u16);
    let stream = kc::Controller::new(api.clone(), watcher::Config::default())
        .with_config(cfg)
        .graceful_shutdown_on(ctx.clone().cancelled_owned())
        .run(
            move |w: Arc<Widget>, ctx: Arc<(Arc<Probe>, Api<Widget>)>| async move {
                let at = Instant::now();
                ctx.0.started(&w, at);
                work(&ctx.0, &w, &ctx.1, patch).await?;
                Ok::<_, kube::Error>(kc::Action::await_change())
            },
            |_, _: &kube::Error, _| kc::Action::requeue(Duration::from_millis(5)),
            Arc::new((probe, api)),
        );
    let task = tokio::spawn(stream.for_each(|_| std::future::ready(())));
    Running { ctx, task }
}

fn start_floor(env: &Environment, probe: Arc<Probe>) -> Running {
    let api: Api<Widget> = Api::namespaced(env.client(), NS);
    let ctx = CancellationToken::new();
    let c = ctx.clone();
    let task = tokio::spawn(async move {
        let mut held: Vec<Widget> = Vec::new();
        let mut s = std::pin::pin!(watcher(api, watcher::Config::default()).applied_objects());
        loop {
            let w = tokio::select! {
                _ = c.cancelled() => break,
                w = s.next() => match w {
                    Some(Ok(w)) => w,
                    Some(Err(_)) => continue,
                    None => break,
                },
            };
            probe.started(&w, Instant::now());
            probe.reconciled(&w);
            held.push(w);
        }
        drop(held);
    });
    Running { ctx, task }
}

async fn start(imp: Imp, env: &Environment, probe: Arc<Probe>, patch: bool, k: Knobs) -> Running {
    match imp {
        Imp::Ctrl => start_ctrl(env, probe, patch, k).await,
        Imp::Kube => start_kube(env, probe, patch, k),
        Imp::Floor => start_floor(env, probe),
    }
}

/// Lets freed buffers settle, then reads the allocator.
async fn allocated() -> usize {
    tokio::time::sleep(Duration::from_millis(300)).await;
    ALLOC.allocated()
}

fn next_run() -> u64 {
    static RUN: AtomicUsize = AtomicUsize::new(1);
    RUN.fetch_add(1, Ordering::Relaxed) as u64
}

/// What one (a) or (b) run measured.
#[derive(Clone, Copy, Default)]
struct Sample {
    /// From start to every object reconciled.
    ms: f64,
    /// Heap held once every object was reconciled, over what was held before the start.
    held: usize,
    /// The whole process's CPU time over the run (the row and the server answering it).
    cpu: Duration,
    /// The most heap held at once during the run, over what was held at its start.
    peak_heap: usize,
    /// The process's peak resident set during the run (the process's whole, retained pages
    /// of earlier rows included: see [`keep_freed_pages`]).
    peak_rss: usize,
    /// Reconciles run from the start to the row's stop.
    calls: usize,
    /// The Widget collection's lists, watches and dropped watchers from the start to the row's
    /// stop (the server's count, the same for every row: relists and watch restarts show here).
    watch: WatchStats,
}

fn stats_since(env: &Environment, before: WatchStats) -> WatchStats {
    let now = env.watch_stats::<Widget>();
    WatchStats {
        lists: now.lists - before.lists,
        watches: now.watches - before.watches,
        dropped: now.dropped - before.dropped,
    }
}

/// One (a) or (b) run: time from start to every object reconciled, the heap it then holds and
/// held at its peak, and the process's CPU, peak RSS and the server's watch counts over it.
async fn cold(imp: Imp, env: &Environment, n: usize, patch: bool, k: Knobs) -> Sample {
    let before = allocated().await;
    let probe = Probe::new(next_run(), n, false);
    let stats = env.watch_stats::<Widget>();
    process::reset_peak_rss();
    let peak = heap::Peak::start(|| ALLOC.allocated());
    let cpu = process::cpu_time();
    let t0 = Instant::now();
    let running = start(imp, env, probe.clone(), patch, k).await;
    probe.wait_all().await;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let cpu = process::cpu_time().saturating_sub(cpu);
    let peak_rss = process::peak_rss();
    let peak_heap = peak.stop(before);
    let held = allocated().await.saturating_sub(before);
    running.stop().await;
    // After the stop, so that a watch the row opened once it had synced is its own.
    let watch = stats_since(env, stats);
    let calls = probe.calls.load(Ordering::Relaxed);
    Sample {
        ms,
        held,
        cpu,
        peak_heap,
        peak_rss,
        calls,
        watch,
    }
}

/// One line per run: the numbers behind a table's median, so a bimodal row shows (its slow
/// repetitions beside their relists, watch restarts and dropped watchers).
fn print_sample(scenario: &str, rep: usize, imp: Imp, s: &Sample) {
    println!(
        "  {scenario} rep {rep} {:<24} {:>10.1} ms  CPU {:>7.2} s  peak heap +{}  peak RSS {}  reconciles {}  lists {} watches {} dropped watchers {}",
        imp.label(),
        s.ms,
        s.cpu.as_secs_f64(),
        process::mib(s.peak_heap),
        process::mib(s.peak_rss),
        s.calls,
        s.watch.lists,
        s.watch.watches,
        s.watch.dropped
    );
}

fn widget(i: usize) -> Widget {
    let mut w = Widget::new(
        &format!("w-{i:06}"),
        WidgetSpec {
            index: i,
            value: 0,
            image: format!("registry.example.com/team/app-{}:1.2.{}", i % 7, i % 100),
            replicas: (i % 5) as u32 + 1,
        },
    );
    w.metadata.namespace = Some(NS.into());
    w.metadata.labels = Some([("app.kubernetes.io/name".to_string(), "bench".to_string())].into());
    w
}

/// Creates objects `from..to`, 32 in flight.
async fn populate(env: &Environment, from: usize, to: usize) {
    let api: Api<Widget> = Api::namespaced(env.client(), NS);
    futures::stream::iter(from..to)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &widget(i))
                    .await
                    .expect("create widget");
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
}

// ---- (c) churn ----

/// Sends `rate` spec updates/s for `secs` over objects `0..n`; returns each update's
/// (object, generation, response time) and the achieved rate.
async fn churn(
    env: &Environment,
    n: usize,
    rate: usize,
    secs: f64,
) -> (Vec<(usize, i64, Instant)>, f64) {
    let api: Api<Widget> = Api::namespaced(env.client(), NS);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(64));
    let t0 = Instant::now();
    let total = (rate as f64 * secs) as usize;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut issued = 0usize;
    let mut tasks = Vec::with_capacity(total);
    while issued < total {
        tick.tick().await;
        let due = ((t0.elapsed().as_secs_f64() * rate as f64) as usize).min(total);
        while issued < due {
            let permit = in_flight.clone().acquire_owned().await.expect("semaphore");
            let (api, sent) = (api.clone(), sent.clone());
            let i = (issued.wrapping_mul(2_654_435_761)) % n;
            let value = issued as u64 + 1;
            tasks.push(tokio::spawn(async move {
                let name = format!("w-{i:06}");
                let p = Patch::Merge(serde_json::json!({ "spec": { "value": value } }));
                if let Ok(w) = api.patch(&name, &PatchParams::default(), &p).await {
                    let at = Instant::now();
                    sent.lock()
                        .push((i, w.metadata.generation.unwrap_or_default(), at));
                }
                drop(permit);
            }));
            issued += 1;
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    let achieved = issued as f64 / t0.elapsed().as_secs_f64();
    let sent = std::mem::take(&mut *sent.lock());
    (sent, achieved)
}

/// Latency of each update in µs: its response to the first reconcile start that saw its
/// generation or a later one (0 when the reconcile started before the response arrived);
/// updates never seen are counted apart.
fn latencies(
    sent: &[(usize, i64, Instant)],
    starts: &[(usize, i64, Instant)],
) -> (Vec<f64>, usize) {
    let mut by_obj: HashMap<usize, Vec<(i64, Instant)>> = HashMap::new();
    for &(i, g, t) in starts {
        by_obj.entry(i).or_default().push((g, t));
    }
    let mut out = Vec::with_capacity(sent.len());
    let mut missed = 0;
    for &(i, g, t) in sent {
        let first = by_obj
            .get(&i)
            .and_then(|v| v.iter().filter(|(sg, _)| *sg >= g).map(|(_, st)| *st).min());
        match first {
            Some(st) => out.push(st.saturating_duration_since(t).as_secs_f64() * 1e6),
            None => missed += 1,
        }
    }
    (out, missed)
}

async fn churn_run(
    imp: Imp,
    env: &Environment,
    n: usize,
    rate: usize,
    secs: f64,
    k: Knobs,
) -> (Vec<f64>, usize, f64) {
    let probe = Probe::new(next_run(), n, true);
    let running = start(imp, env, probe.clone(), false, k).await;
    probe.wait_all().await;
    let (sent, achieved) = churn(env, n, rate, secs).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.stop().await;
    let starts = probe
        .starts
        .as_ref()
        .map(|s| std::mem::take(&mut *s.lock()))
        .unwrap_or_default();
    let (lat, missed) = latencies(&sent, &starts);
    (lat, missed, achieved)
}

// ---- the run ----

struct Config {
    full: bool,
    sizes: Vec<usize>,
    reps: usize,
    rates: Vec<usize>,
    churn_secs: f64,
    churn_objects: usize,
    knobs: Knobs,
    /// One uncounted (a) run of every row before each size's (a) repetitions, and one (b)
    /// run before its (b) repetitions (`CTRL_BENCH_E2E_WARMUP=0` turns them off; on in the
    /// full run).
    warmup: bool,
    /// Run (b) (`CTRL_BENCH_E2E_PATCH=0`: (a) only, e.g. to profile it).
    patch: bool,
    /// The rows (a) and (b) run: `CTRL_BENCH_E2E_ROWS=ctrl` (label substrings, comma
    /// separated) keeps those whose label contains one; all by default.
    rows: Vec<Imp>,
}

fn env_list(name: &str) -> Option<Vec<usize>> {
    let v = std::env::var(name).ok()?;
    let list: Vec<usize> = v.split(',').filter_map(|s| s.trim().parse().ok()).collect();
    (!list.is_empty()).then_some(list)
}

fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

fn config() -> Config {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = env_list("CTRL_BENCH_E2E_SIZES").unwrap_or(if full {
        vec![1_000, 10_000, 100_000]
    } else {
        vec![50]
    });
    let max = sizes.iter().copied().max().unwrap_or(1);
    Config {
        full,
        reps: env_num("CTRL_BENCH_E2E_REPS")
            .unwrap_or(if full { 3 } else { 1 })
            .max(1),
        // `CTRL_BENCH_E2E_RATES=0` skips the churn.
        rates: env_list("CTRL_BENCH_E2E_RATES").unwrap_or(if full {
            vec![1_000, 5_000]
        } else {
            vec![200]
        }),
        churn_secs: env_num("CTRL_BENCH_E2E_CHURN_SECS").unwrap_or(if full { 30.0 } else { 1.0 }),
        churn_objects: env_num::<usize>("CTRL_BENCH_E2E_CHURN_OBJECTS")
            .unwrap_or(if full { 10_000 } else { 50 })
            .min(max)
            .max(1),
        knobs: Knobs {
            concurrency: env_num("CTRL_BENCH_E2E_CONCURRENCY").unwrap_or(16).max(1),
        },
        warmup: env_num::<u8>("CTRL_BENCH_E2E_WARMUP").map_or(full, |w| w != 0),
        patch: env_num::<u8>("CTRL_BENCH_E2E_PATCH").is_none_or(|p| p != 0),
        sizes,
        rows: rows_wanted(),
    }
}

fn rows_wanted() -> Vec<Imp> {
    let wanted = std::env::var("CTRL_BENCH_E2E_ROWS").unwrap_or_default();
    let keep = |i: &Imp| {
        wanted.trim().is_empty()
            || wanted
                .split(',')
                .any(|w| !w.trim().is_empty() && i.label().contains(w.trim()))
    };
    IMPS.into_iter().filter(keep).collect()
}

const IMPS: [Imp; 3] = [Imp::Ctrl, Imp::Kube, Imp::Floor];

fn columns_print(title: &str, unit: &str, higher: bool, rows: &[Row]) {
    let kube = |l: &str| {
        (l != Imp::Kube.label() && l != Imp::Floor.label()).then(|| Imp::Kube.label().to_string())
    };
    let floor = |l: &str| (l != Imp::Floor.label()).then(|| Imp::Floor.label().to_string());
    let columns = [
        Column {
            header: "vs kube-runtime",
            base: &kube,
        },
        Column {
            header: "vs floor",
            base: &floor,
        },
    ];
    table::print(title, unit, higher, rows, &columns);
}

fn find(rows: &[Row], i: Imp) -> Option<&Row> {
    rows.iter().find(|r| r.label == i.label())
}

/// ctrl's median over kube-runtime's (or the floor's), as a time ratio (< 1: ctrl faster).
fn time_ratio(rows: &[Row], base: Imp) -> f64 {
    let med = |i: Imp| find(rows, i).map_or(f64::NAN, |r| r.med);
    med(Imp::Ctrl) / med(base)
}

/// A verdict on `ratio <= goal` (ctrl over `base`), with "within noise" when the repetitions'
/// spread reaches across the goal: from ctrl's fastest over the base's slowest to ctrl's slowest
/// over the base's fastest.
fn noisy_verdict(rows: &[Row], base: Imp, goal: f64) -> String {
    let (Some(c), Some(b)) = (find(rows, Imp::Ctrl), find(rows, base)) else {
        return "-".into();
    };
    let (med, lo, hi) = (c.med / b.med, c.min / b.max, c.max / b.min);
    let within = lo <= goal && goal < hi;
    format!(
        "{med:.2} (<= {goal}: {}{}; spread {lo:.2}..{hi:.2})",
        verdict(med <= goal),
        if within { ", within noise" } else { "" }
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// The goals at one size, each with its spread; ctrl's own spread (max/min of its repetitions)
/// against the 1.15.
fn print_goals(n: usize, a: &[Row], b: &[Row]) {
    println!(
        "  goals at N = {n}: (a) ctrl/kube-runtime = {}; (a) ctrl/floor = {}",
        noisy_verdict(a, Imp::Kube, 0.8),
        noisy_verdict(a, Imp::Floor, 1.2)
    );
    if !b.is_empty() {
        println!(
            "  goals at N = {n}: (b) ctrl/kube-runtime = {}",
            noisy_verdict(b, Imp::Kube, 0.8)
        );
    }
    for (scenario, rows) in [("(a)", a), ("(b)", b)] {
        if let Some(c) = find(rows, Imp::Ctrl).filter(|c| c.min > 0.0) {
            let spread = c.max / c.min;
            println!(
                "  ctrl's repetitions in {scenario}: max/min = {spread:.2} (<= 1.15: {})",
                verdict(spread <= 1.15)
            );
        }
    }
}

/// From this size on, (b) is not run: a million status patches would take the run's hours, and
/// the million-object bar is (a) (hold, start, sync and reconcile every object once).
const PATCH_MAX: usize = 999_999;

/// Every run of one size, by scenario and row.
#[derive(Default)]
struct Runs {
    a: HashMap<Imp, Vec<Sample>>,
    b: HashMap<Imp, Vec<Sample>>,
}

impl Runs {
    /// Table rows of `f` over each row's runs of `scenario`, in `IMPS` order.
    fn rows(m: &HashMap<Imp, Vec<Sample>>, f: impl Fn(&Sample) -> f64) -> Vec<Row> {
        IMPS.iter()
            .filter_map(|i| {
                let v = m.get(i)?.iter().map(&f).collect();
                Some(Row::from_values(i.label(), v, String::new()))
            })
            .collect()
    }
}

/// (a) and (b) at one size, each run printed as it ends. First, unless
/// `CTRL_BENCH_E2E_WARMUP=0` or the size is past `PATCH_MAX`, one (a) run of every row that is
/// printed but not counted: a process's first run at a size pays for the allocator's first pages
/// and the server's first lists of that many objects, and it was every row's slowest. Then every
/// repetition of (a), then every repetition of (b): a (b) run patches every object's status, so
/// an (a) run after one lists larger objects than an (a) run before it; all (a) runs of a size
/// see the same objects this way. The (b) repetitions follow one uncounted (b) run of every
/// row, likewise: the first status patch of each object (and the server's first history
/// entries of them) made the first (b) run of a size the odd one out.
async fn cold_size(env: &Environment, n: usize, cfg: &Config) -> Runs {
    let mut runs = Runs::default();
    warm_up(env, n, cfg, false).await;
    for rep in 0..cfg.reps {
        for imp in rotated(&cfg.rows, rep) {
            let s = cold(imp, env, n, false, cfg.knobs).await;
            print_sample("(a)", rep, imp, &s);
            runs.a.entry(imp).or_default().push(s);
        }
    }
    if !cfg.patch || n > PATCH_MAX {
        return runs;
    }
    warm_up(env, n, cfg, true).await;
    for rep in 0..cfg.reps {
        for imp in rotated(&cfg.rows, rep).filter(|i| *i != Imp::Floor) {
            let s = cold(imp, env, n, true, cfg.knobs).await;
            print_sample("(b)", rep, imp, &s);
            runs.b.entry(imp).or_default().push(s);
        }
    }
    runs
}

/// One uncounted (a) run, or (b) run (`patch`), of every row, unless `CTRL_BENCH_E2E_WARMUP=0`
/// or the size is past `PATCH_MAX` (see [`cold_size`]).
async fn warm_up(env: &Environment, n: usize, cfg: &Config, patch: bool) {
    if !cfg.warmup || n > PATCH_MAX {
        return;
    }
    let scenario = if patch { "(b)" } else { "(a)" };
    for &imp in cfg.rows.iter().filter(|i| !patch || **i != Imp::Floor) {
        let s = cold(imp, env, n, patch, cfg.knobs).await;
        print_sample(&format!("{scenario} warm-up, not counted,"), 0, imp, &s);
    }
}

/// The rows in repetition `rep`'s order: each repetition starts with another row, so no row
/// always runs first (right after the previous repetition's last row freed its objects).
fn rotated(rows: &[Imp], rep: usize) -> impl Iterator<Item = Imp> {
    let mut order = rows.to_vec();
    order.rotate_left(rep % rows.len().max(1));
    order.into_iter()
}

fn pct(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// (c) at one rate: every row under the same churn, one after the other.
async fn churn_rate(env: &Environment, rate: usize, cfg: &Config) -> Vec<(String, Vec<f64>)> {
    let n = cfg.churn_objects;
    println!(
        "\n(c) churn: {rate} spec updates/s for {:.0} s over {n} objects; µs from the update's response to the start of a reconcile that saw it",
        cfg.churn_secs
    );
    println!(
        "  {:<32} {:>10} {:>10} {:>10} {:>10} {:>8} {:>16}",
        "implementation", "sent/s", "p50 µs", "p99 µs", "max µs", "missed", "p99 vs kube"
    );
    let mut out = Vec::new();
    let mut kube_p99 = f64::NAN;
    for imp in [Imp::Kube, Imp::Ctrl, Imp::Floor] {
        let (mut lat, missed, achieved) =
            churn_run(imp, env, n, rate, cfg.churn_secs, cfg.knobs).await;
        lat.sort_by(|a, b| a.total_cmp(b));
        let p99 = pct(&lat, 0.99);
        if imp == Imp::Kube {
            kube_p99 = p99;
        }
        let vs = table::ratio(p99, kube_p99, false).map_or("-".into(), |x| format!("{x:.2}x"));
        println!(
            "  {:<32} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>8} {:>16}",
            imp.label(),
            achieved,
            pct(&lat, 0.5),
            p99,
            pct(&lat, 1.0),
            missed,
            if imp == Imp::Kube { String::new() } else { vs }
        );
        if imp == Imp::Ctrl {
            println!(
                "  goal (c) at {rate}/s: ctrl p99 <= kube-runtime p99: {} ({p99:.0} vs {kube_p99:.0} µs)",
                verdict(p99 <= kube_p99)
            );
        }
        out.push((imp.label().to_string(), lat));
    }
    out
}

fn main() {
    keep_freed_pages();
    let cfg = config();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let max = cfg.sizes.iter().copied().max().unwrap_or(0);
    println!(
        "e2e bench ({} mode): sizes {:?}, {} repetition(s) interleaved, {} workers per controller, 2-worker tokio runtime, envtest in-process",
        if cfg.full { "full" } else { "quick" },
        cfg.sizes,
        cfg.reps,
        cfg.knobs.concurrency
    );
    println!("ratios: > 1 means the row is better (faster) than its base");
    rt.block_on(async {
        let env = Environment::builder()
            .crd(Widget::crd())
            .history_window(4 * max + 1_000)
            .start()
            .await
            .expect("envtest");
        let mut sizes = cfg.sizes.clone();
        sizes.sort_unstable();
        let mut have = 0;
        let mut time_series: HashMap<String, Vec<(f64, f64)>> = HashMap::new();
        let mut memory_rows = Vec::new();
        for &n in &sizes {
            populate_report(&env, have, n).await;
            have = have.max(n);
            let (a, b, m) = size_report(&env, n, &cfg, n == max).await;
            for (scenario, rows) in [("(a)", &a), ("(b)", &b)] {
                for r in rows.iter() {
                    time_series
                        .entry(format!("{scenario} {}", r.label))
                        .or_default()
                        .push((n as f64, r.med));
                }
            }
            if !m.is_empty() {
                memory_rows = m;
            }
        }
        plots(time_series, &memory_rows, max);
        for &rate in cfg.rates.iter().filter(|r| **r > 0) {
            let lat = churn_rate(&env, rate, &cfg).await;
            plot::cdf(
                &format!("e2e_churn_cdf_{rate}.svg"),
                &format!("e2e churn {rate} updates/s: update response -> reconcile start"),
                "µs",
                &lat,
            );
        }
    });
}

/// Creates objects `have..n` and says what the server holds per stored object (its heap growth,
/// with the history entries of the creates) against the objects' JSON as the server returns it.
async fn populate_report(env: &Environment, have: usize, n: usize) {
    let heap = ALLOC.allocated();
    let t = Instant::now();
    populate(env, have, n).await;
    let grown = ALLOC.allocated().saturating_sub(heap);
    println!("\n== N = {n} Widgets (populated in {:.1?}) ==", t.elapsed());
    let added = n.saturating_sub(have);
    if added == 0 {
        return;
    }
    let json = stored_json_size(env, have, n).await;
    let per = grown as f64 / added as f64;
    println!(
        "  ctrl-envtest's heap per stored object: {per:.0} bytes (the object, its key and its history entry) for {json:.0} bytes of JSON: {:.2}x (goal <= 2: {})",
        per / json,
        verdict(per <= 2.0 * json)
    );
}

/// The mean size of the JSON the server returns for objects `from..to` (a sample of up to 100).
async fn stored_json_size(env: &Environment, from: usize, to: usize) -> f64 {
    let client = env.client();
    let step = ((to - from) / 100).max(1);
    let mut sizes = Vec::new();
    for i in (from..to).step_by(step) {
        let path = format!("/apis/bench.ctrl.dev/v1/namespaces/{NS}/widgets/w-{i:06}");
        let req = http::Request::get(path).body(Vec::new()).expect("request");
        if let Ok(text) = client.request_text(req).await {
            sizes.push(text.len() as f64);
        }
    }
    sizes.iter().sum::<f64>() / sizes.len().max(1) as f64
}

/// (a) and (b) at size `n`: every run, the time tables with their spread and goals, the resources
/// each row used in (a), and at `memory` the heap held per object (d). Returns the time rows of
/// (a) and (b) and the heap rows.
async fn size_report(
    env: &Environment,
    n: usize,
    cfg: &Config,
    memory: bool,
) -> (Vec<Row>, Vec<Row>, Vec<Row>) {
    let runs = cold_size(env, n, cfg).await;
    let a = Runs::rows(&runs.a, |s| s.ms);
    let b = Runs::rows(&runs.b, |s| s.ms);
    columns_print(
        &format!("(a) start -> every object reconciled once, N = {n} (ms)"),
        "ms",
        false,
        &a,
    );
    if !b.is_empty() {
        columns_print(
            &format!("(b) (a) + one status patch per object, N = {n} (ms)"),
            "ms",
            false,
            &b,
        );
    }
    print_goals(n, &a, &b);
    let cpu = Runs::rows(&runs.a, |s| s.cpu.as_secs_f64());
    columns_print(
        &format!("(a) the process's CPU over the run, N = {n} (s)"),
        "s",
        false,
        &cpu,
    );
    let peak = Runs::rows(&runs.a, |s| s.peak_heap as f64 / 1_048_576.0);
    columns_print(
        &format!("(a) peak heap over the run's start, N = {n} (MiB)"),
        "MiB",
        false,
        &peak,
    );
    let mut m = Vec::new();
    if memory {
        m = Runs::rows(&runs.a, |s| s.held as f64 / n as f64);
        columns_print(
            &format!("(d) heap held per object after (a) (the cache), N = {n} (bytes)"),
            "bytes/object",
            false,
            &m,
        );
        let dk = time_ratio(&m, Imp::Kube);
        let goal = if n >= 1_000_000 { 0.3 } else { 1.0 };
        println!(
            "  goal (d): ctrl/kube-runtime bytes per object = {dk:.2} (<= {goal}: {})",
            verdict(dk <= goal)
        );
    }
    (a, b, m)
}

fn plots(time_series: HashMap<String, Vec<(f64, f64)>>, memory_rows: &[Row], max: usize) {
    let mut series: Vec<plot::Series> = time_series
        .into_iter()
        .map(|(label, points)| plot::Series { label, points })
        .collect();
    series.sort_by(|a, b| a.label.cmp(&b.label));
    plot::lines(
        "e2e_time_vs_n.svg",
        "e2e: start -> all N reconciled (median)",
        ("objects (N)", "ms"),
        true,
        &series,
    );
    plot::bars(
        "e2e_memory.svg",
        "e2e: heap held per object after (a)",
        1,
        &[plot::Panel {
            title: format!("N = {max} (bytes/object)"),
            bars: memory_rows
                .iter()
                .map(|r| (r.label.clone(), r.med))
                .collect(),
        }],
    );
}
