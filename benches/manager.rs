//! Manager bench: cold start of a manager with one controller on envtest, until the
//! first reconcile, side by side with kube-runtime's `Controller` and a bare
//! `watcher` (list + watch, first object seen) on the same envtest in the same run;
//! then how long the manager takes to stop.
//!
//! Each iteration builds everything from scratch (manager, cache, client, controller,
//! `source::Kind`) against a running envtest that already holds the ConfigMaps, and
//! stops the clock when the reconciler is first called.
//!
//! `cargo bench --bench manager` runs the full sizes (1 and 1,000 ConfigMaps, 50
//! iterations; `CTRL_BENCH_MANAGER_SIZES=1000,100000` for others, 5 iterations from 10,000
//! up); without `--bench` (as `cargo test --all-targets` runs it) a tiny quick mode only
//! checks it all works.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctrl::controller::{self, Controller};
use ctrl::handler::EnqueueRequestForObject;
use ctrl::manager::{Manager, Options};
use ctrl::reconcile::{self, Action, Request};
use ctrl::source::Kind;
use ctrl_envtest::Environment;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::controller as kc;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One ctrl iteration: (time to first reconcile, time to stop).
async fn ctrl_cold_start(env: &Environment, i: usize) -> (Duration, Duration) {
    let t0 = Instant::now();
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(env.client(), opts).expect("manager");
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let reconciler = reconcile::func(move |_ctx, _req: Request| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(());
            Ok(Action::done())
        }
    });
    let c = Controller::new(
        format!("bench-manager-{i}"),
        reconciler,
        controller::Options::default(),
    )
    .expect("controller");
    c.watch(Kind::<ConfigMap>::new(
        &mgr.cache(),
        EnqueueRequestForObject,
    ))
    .await
    .expect("watch");
    mgr.add(c).expect("add");
    let ctx = CancellationToken::new();
    let run = {
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        tokio::spawn(async move { mgr.start(ctx).await })
    };
    rx.recv().await.expect("first reconcile");
    let first = t0.elapsed();
    let t1 = Instant::now();
    ctx.cancel();
    run.await.expect("manager task").expect("clean stop");
    (first, t1.elapsed())
}

/// kube-runtime's Controller from scratch to its first reconcile.
async fn kube_cold_start(env: &Environment) -> Duration {
    let t0 = Instant::now();
    let api: Api<ConfigMap> = Api::all(env.client());
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let stream = kc::Controller::new(api, watcher::Config::default()).run(
        move |_obj: Arc<ConfigMap>, _ctx: Arc<()>| {
            let _ = tx.send(());
            futures::future::ready(Ok::<_, Infallible>(kc::Action::await_change()))
        },
        |_, _: &Infallible, _| kc::Action::await_change(),
        Arc::new(()),
    );
    let drive = tokio::spawn(stream.for_each(|_| std::future::ready(())));
    rx.recv().await.expect("first reconcile");
    let first = t0.elapsed();
    drive.abort();
    first
}

/// The floor: a bare watcher's list + watch until the first object arrives.
async fn bare_watch(env: &Environment) -> Duration {
    let t0 = Instant::now();
    let api: Api<ConfigMap> = Api::all(env.client());
    let mut s = std::pin::pin!(watcher(api, watcher::Config::default()).applied_objects());
    s.next().await.expect("an object").expect("no watch error");
    t0.elapsed()
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), v[v.len() - 1])
}

fn fmt_d(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.0}µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2}ms", d.as_secs_f64() * 1e3)
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (iters, default_sizes) = if full {
        (50, vec![1, 1_000])
    } else {
        (2, vec![1, 10])
    };
    // `CTRL_BENCH_MANAGER_SIZES=1,1000,100000` for other sizes; large ones run fewer times.
    let objects: Vec<usize> = std::env::var("CTRL_BENCH_MANAGER_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or(default_sizes);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "manager bench ({} mode): cold start to first reconcile, {iters} iterations per row, envtest in-process",
        if full { "full" } else { "quick" }
    );
    println!(
        "\n{:<44} {:>10} {:>10} {:>10}",
        "cold start -> first reconcile", "p50", "p99", "max"
    );
    for n in objects {
        let env = rt.block_on(async {
            let env = Environment::builder().start().await.expect("envtest");
            let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            futures::stream::iter(0..n)
                .map(|i| {
                    let cms = cms.clone();
                    async move {
                        let mut cm = ConfigMap::default();
                        cm.metadata.name = Some(format!("cm-{i}"));
                        cms.create(&PostParams::default(), &cm)
                            .await
                            .expect("create");
                    }
                })
                .buffer_unordered(16)
                .collect::<Vec<()>>()
                .await;
            env
        });
        let iters = if n >= 10_000 { iters.min(5) } else { iters };
        let mut ctrl = Vec::new();
        let mut stop = Vec::new();
        let mut kube = Vec::new();
        let mut bare = Vec::new();
        for i in 0..iters {
            let (first, stopped) = rt.block_on(ctrl_cold_start(&env, n * 1_000_000 + i));
            ctrl.push(first);
            stop.push(stopped);
            kube.push(rt.block_on(kube_cold_start(&env)));
            bare.push(rt.block_on(bare_watch(&env)));
        }
        let cms = if n == 1 { "ConfigMap" } else { "ConfigMaps" };
        let rows = [
            (format!("ctrl Manager + Controller, {n} {cms}"), ctrl),
            (format!("kube-runtime Controller, {n} {cms}"), kube),
            (format!("bare watcher (first object), {n} {cms}"), bare),
            (format!("ctrl Manager stop, {n} {cms}"), stop),
        ];
        let mut p50s = Vec::new();
        for (name, v) in rows {
            let (p50, p99, max) = stats(v);
            p50s.push(p50);
            println!(
                "{name:<44} {:>10} {:>10} {:>10}",
                fmt_d(p50),
                fmt_d(p99),
                fmt_d(max)
            );
        }
        println!(
            "  p50 ratios: ctrl/kube-runtime = {:.2}x, ctrl/bare watcher = {:.2}x\n",
            p50s[0].as_secs_f64() / p50s[1].as_secs_f64(),
            p50s[0].as_secs_f64() / p50s[2].as_secs_f64()
        );
    }
}
