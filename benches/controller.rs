//! Controller bench: event -> reconcile-start latency at a fixed event rate, and no-op
//! reconcile throughput, for ctrl's Controller side by side with kube-runtime's
//! `applier` and a bare channel baseline (no queue, no dedup, no workers).
//!
//! `cargo bench --bench controller` runs the full sizes; without `--bench` (as
//! `cargo test --all-targets` runs it) a tiny quick mode only checks it all works.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ctrl::controller::{Controller, Options};
use ctrl::event::GenericEvent;
use ctrl::handler::EnqueueRequestForObject;
use ctrl::reconcile::{self, Action, Request};
use ctrl::source::Channel;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::runtime::controller::{self as kc, applier};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Send stamps and measured latencies, indexed by event number.
struct Probe {
    t0: Instant,
    sent: Vec<AtomicU64>,
    latency: Vec<AtomicU64>,
    done: AtomicUsize,
    all_done: Notify,
}

impl Probe {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            t0: Instant::now(),
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            latency: (0..n).map(|_| AtomicU64::new(0)).collect(),
            done: AtomicUsize::new(0),
            all_done: Notify::new(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn stamp_send(&self, i: usize) {
        self.sent[i].store(self.now(), Ordering::Relaxed);
    }

    /// Called at reconcile start for object `name` (`cm-<i>`).
    fn record(&self, name: &str) {
        let Some(i) = name
            .strip_prefix("cm-")
            .and_then(|s| s.parse::<usize>().ok())
        else {
            return;
        };
        let sent = self.sent[i].load(Ordering::Relaxed);
        self.latency[i].store(self.now().saturating_sub(sent), Ordering::Relaxed);
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.sent.len() {
            self.all_done.notify_one();
        }
    }

    async fn wait(&self) {
        while self.done.load(Ordering::Acquire) < self.sent.len() {
            let n = self.all_done.notified();
            if self.done.load(Ordering::Acquire) >= self.sent.len() {
                break;
            }
            n.await;
        }
    }

    fn percentiles(&self) -> (Duration, Duration, Duration) {
        let mut v: Vec<u64> = self
            .latency
            .iter()
            .map(|l| l.load(Ordering::Relaxed))
            .collect();
        v.sort_unstable();
        let at = |q: f64| {
            let idx = ((v.len() as f64 - 1.0) * q).round() as usize;
            Duration::from_nanos(v.get(idx).copied().unwrap_or(0))
        };
        (at(0.50), at(0.99), at(1.0))
    }
}

fn objects(n: usize) -> Vec<Arc<ConfigMap>> {
    (0..n)
        .map(|i| {
            Arc::new(ConfigMap {
                metadata: ObjectMeta {
                    namespace: Some("bench".into()),
                    name: Some(format!("cm-{i}")),
                    ..Default::default()
                },
                ..Default::default()
            })
        })
        .collect()
}

/// Sends `n` items at `rate`/s from a plain thread (paced by sleeping), stamping each.
fn paced_sender<T: Send + 'static>(
    probe: Arc<Probe>,
    items: Vec<T>,
    rate: u64,
    tx: mpsc::Sender<T>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let gap = Duration::from_nanos(1_000_000_000 / rate.max(1));
        let start = Instant::now();
        for (i, item) in items.into_iter().enumerate() {
            let target = start + gap * u32::try_from(i).unwrap_or(u32::MAX);
            let now = Instant::now();
            if target > now {
                std::thread::sleep(target - now);
            }
            probe.stamp_send(i);
            if tx.blocking_send(item).is_err() {
                return;
            }
        }
    })
}

/// What a driver measures: the probe (latencies) and the wall time until all reconciled.
struct Outcome {
    probe: Arc<Probe>,
    elapsed: Duration,
}

/// ctrl's Controller with a Channel source; `rate = None` pre-fills the channel.
async fn run_ctrl(n: usize, rate: Option<u64>, workers: usize) -> Outcome {
    let probe = Probe::new(n);
    let p = probe.clone();
    let r = reconcile::func(move |_, req: Request| {
        p.record(&req.name);
        std::future::ready(Ok(Action::done()))
    });
    let opts = Options {
        max_concurrent_reconciles: workers,
        skip_name_validation: Some(true),
        ..Options::default()
    };
    let c = Controller::new("bench", r, opts).expect("controller");
    let (tx, rx) = mpsc::channel(n.max(1));
    c.watch(Channel::new(rx, EnqueueRequestForObject))
        .await
        .expect("watch");
    let events: Vec<_> = objects(n).into_iter().map(GenericEvent::new).collect();
    let sender = match rate {
        Some(rate) => Some(paced_sender(probe.clone(), events, rate, tx)),
        None => {
            for (i, e) in events.into_iter().enumerate() {
                probe.stamp_send(i);
                tx.send(e).await.expect("buffered");
            }
            None
        }
    };
    let ctx = CancellationToken::new();
    let start = Instant::now();
    let run = tokio::spawn({
        let (c, ctx) = (c.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    probe.wait().await;
    let elapsed = start.elapsed();
    ctx.cancel();
    run.await.expect("controller task").expect("controller");
    if let Some(s) = sender {
        s.join().expect("sender");
    }
    Outcome { probe, elapsed }
}

#[derive(Debug)]
struct NeverFails;
impl std::fmt::Display for NeverFails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}
impl std::error::Error for NeverFails {}

/// kube-runtime's applier over a ready store holding every object.
async fn run_applier(n: usize, rate: Option<u64>, concurrency: u16) -> Outcome {
    let probe = Probe::new(n);
    let objs = objects(n);
    let (store, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for o in &objs {
        writer.apply_watcher_event(&watcher::Event::InitApply((**o).clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let (tx, rx) = mpsc::channel::<ObjectRef<ConfigMap>>(n.max(1));
    let refs: Vec<_> = objs.iter().map(|o| ObjectRef::from_obj(&**o)).collect();
    // The applier shuts down (dropping what is still scheduled) once its input stream
    // ends, so the input stays open until everything has been reconciled.
    let keep_open = tx.clone();
    let sender = match rate {
        Some(rate) => Some(paced_sender(probe.clone(), refs, rate, tx)),
        None => {
            for (i, r) in refs.into_iter().enumerate() {
                probe.stamp_send(i);
                tx.send(r).await.expect("buffered");
            }
            None
        }
    };
    let queue = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|r| (Ok::<_, Infallible>(r), rx))
    });
    let p = probe.clone();
    let start = Instant::now();
    let stream = applier(
        move |obj: Arc<ConfigMap>, _ctx: Arc<()>| {
            p.record(obj.metadata.name.as_deref().unwrap_or_default());
            futures::future::ready(Ok::<_, NeverFails>(kc::Action::await_change()))
        },
        |_, _: &NeverFails, _| kc::Action::await_change(),
        Arc::new(()),
        store,
        queue,
        kc::Config::default().concurrency(concurrency),
    );
    let drive = tokio::spawn(stream.for_each(|_| std::future::ready(())));
    probe.wait().await;
    let elapsed = start.elapsed();
    drive.abort();
    drop(keep_open);
    if let Some(s) = sender {
        s.join().expect("sender");
    }
    Outcome { probe, elapsed }
}

/// The floor: one task reading the channel and calling the no-op reconcile inline.
async fn run_bare(n: usize, rate: Option<u64>) -> Outcome {
    let probe = Probe::new(n);
    let (tx, mut rx) = mpsc::channel::<Arc<ConfigMap>>(n.max(1));
    let objs = objects(n);
    let sender = match rate {
        Some(rate) => Some(paced_sender(probe.clone(), objs, rate, tx)),
        None => {
            for (i, o) in objs.into_iter().enumerate() {
                probe.stamp_send(i);
                tx.send(o).await.expect("buffered");
            }
            None
        }
    };
    let p = probe.clone();
    let start = Instant::now();
    let consumer = tokio::spawn(async move {
        while let Some(o) = rx.recv().await {
            p.record(o.metadata.name.as_deref().unwrap_or_default());
        }
    });
    probe.wait().await;
    let elapsed = start.elapsed();
    consumer.abort();
    if let Some(s) = sender {
        s.join().expect("sender");
    }
    Outcome { probe, elapsed }
}

fn fmt_d(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (lat_n, tput_n, rate) = if full {
        (50_000, 200_000, 10_000)
    } else {
        (200, 1_000, 10_000)
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "controller bench ({} mode): latency = {lat_n} events at {rate}/s, throughput = {tput_n} no-op reconciles",
        if full { "full" } else { "quick" }
    );

    type Driver = Box<dyn Fn(usize, Option<u64>) -> futures::future::BoxFuture<'static, Outcome>>;
    let drivers: Vec<(&str, Driver)> = vec![
        (
            "ctrl Controller, 1 worker",
            Box::new(|n, r| Box::pin(run_ctrl(n, r, 1))),
        ),
        (
            "ctrl Controller, 8 workers",
            Box::new(|n, r| Box::pin(run_ctrl(n, r, 8))),
        ),
        (
            "kube applier, concurrency 1",
            Box::new(|n, r| Box::pin(run_applier(n, r, 1))),
        ),
        (
            "kube applier, unbounded",
            Box::new(|n, r| Box::pin(run_applier(n, r, 0))),
        ),
        (
            "bare mpsc (no queue)",
            Box::new(|n, r| Box::pin(run_bare(n, r))),
        ),
    ];

    println!(
        "\n{:<30} {:>10} {:>10} {:>10} {:>16}",
        "event -> reconcile start", "p50", "p99", "max", "throughput/s"
    );
    let mut tputs = Vec::new();
    for (name, drive) in &drivers {
        let lat = rt.block_on(drive(lat_n, Some(rate)));
        let (p50, p99, max) = lat.probe.percentiles();
        let tput = rt.block_on(drive(tput_n, None));
        let per_s = tput_n as f64 / tput.elapsed.as_secs_f64();
        tputs.push(per_s);
        println!(
            "{name:<30} {:>10} {:>10} {:>10} {:>16.0}",
            fmt_d(p50),
            fmt_d(p99),
            fmt_d(max),
            per_s
        );
    }
    if let [c1, c8, k1, ku, bare] = tputs[..] {
        println!(
            "\nthroughput ratios: ctrl(1)/applier(1) = {:.2}x, ctrl(8)/applier(unbounded) = {:.2}x, ctrl(1)/bare = {:.2}x",
            c1 / k1,
            c8 / ku,
            c1 / bare
        );
    }
}
