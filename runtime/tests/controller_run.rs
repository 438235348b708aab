//! The Controller end to end, driven by Channel and Func sources (no API server):
//! controller-runtime's `controller_test.go` cases for result handling, backoff, panics,
//! shutdown, late watches, source start/sync timeouts and metrics.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ctrl_runtime::controller::{Controller, Error as ControllerError, Options};
use ctrl_runtime::event::GenericEvent;
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::metrics::registry;
use ctrl_runtime::predicate;
use ctrl_runtime::reconcile::{self, Action, Error, Request};
use ctrl_runtime::source::{self, Channel, Func, Source};
use ctrl_runtime::workqueue::{ItemExponentialFailureRateLimiter, Queue};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use prometheus::proto::MetricType;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

fn cm(ns: &str, name: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn channel() -> (mpsc::Sender<GenericEvent<ConfigMap>>, Channel<ConfigMap>) {
    let (tx, rx) = mpsc::channel(1024);
    (tx, Channel::new(rx, EnqueueRequestForObject))
}

async fn send(tx: &mpsc::Sender<GenericEvent<ConfigMap>>, ns: &str, name: &str) {
    tx.send(GenericEvent::new(cm(ns, name)))
        .await
        .expect("channel source is running");
}

fn run(c: &Controller, ctx: &CancellationToken) -> JoinHandle<Result<(), ControllerError>> {
    let (c, ctx) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c.start(ctx).await })
}

struct Running {
    c: Controller,
    tx: mpsc::Sender<GenericEvent<ConfigMap>>,
    ctx: CancellationToken,
    h: JoinHandle<Result<(), ControllerError>>,
}

/// A started controller fed by a Channel source.
async fn launch(name: impl Into<String>, r: impl reconcile::Reconciler, opts: Options) -> Running {
    let c = Controller::new(name, r, opts).expect("controller");
    let (tx, src) = channel();
    c.watch(src).await.expect("watch");
    let ctx = CancellationToken::new();
    let h = run(&c, &ctx);
    Running { c, tx, ctx, h }
}

/// Cancels and waits for `start` to return `Ok`.
async fn stop(ctx: CancellationToken, h: JoinHandle<Result<(), ControllerError>>) {
    ctx.cancel();
    h.await.expect("start task").expect("start");
}

fn limiter() -> Option<Arc<dyn ctrl_runtime::workqueue::RateLimiter<Request>>> {
    Some(Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(1000),
    )))
}

/// A metric's value for `controller` (counter/gauge value, histogram sample count).
fn metric(family: &str, controller: &str, result: Option<&str>) -> Option<f64> {
    let families = registry().gather();
    let mf = families.iter().find(|mf| mf.name() == family)?;
    let m = mf.get_metric().iter().find(|m| {
        let labels = m.get_label();
        labels
            .iter()
            .any(|l| l.name() == "controller" && l.value() == controller)
            && result.is_none_or(|r| {
                labels
                    .iter()
                    .any(|l| l.name() == "result" && l.value() == r)
            })
    })?;
    Some(match mf.get_field_type() {
        MetricType::COUNTER => m.get_counter().get_value(),
        MetricType::GAUGE => m.get_gauge().get_value(),
        MetricType::HISTOGRAM => m.get_histogram().get_sample_count() as f64,
        _ => f64::NAN,
    })
}

/// A reconciler that records when it ran and answers from a script (then `done`).
#[derive(Clone, Default)]
struct Scripted {
    calls: Arc<Mutex<Vec<(Request, Instant)>>>,
    script: Arc<Mutex<Vec<Step>>>,
    notify: Arc<Notify>,
}

#[derive(Clone, Copy)]
enum Step {
    Fail,
    Terminal,
    Requeue,
    After(Duration),
    Panic,
}

impl Scripted {
    fn new(steps: &[Step]) -> Self {
        let s = Self::default();
        *s.script.lock() = steps.iter().rev().copied().collect();
        s
    }

    fn times(&self) -> Vec<Duration> {
        let calls = self.calls.lock();
        calls.windows(2).map(|w| w[1].1 - w[0].1).collect()
    }

    fn count(&self) -> usize {
        self.calls.lock().len()
    }

    async fn wait_for_calls(&self, n: usize) {
        loop {
            let notified = self.notify.notified();
            if self.count() >= n {
                return;
            }
            notified.await;
        }
    }
}

#[async_trait]
impl reconcile::Reconciler for Scripted {
    async fn reconcile(&self, _ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        self.calls.lock().push((req, Instant::now()));
        let step = self.script.lock().pop();
        self.notify.notify_waiters();
        match step {
            None => Ok(Action::done()),
            Some(Step::Fail) => Err(Error::new("boom")),
            Some(Step::Terminal) => Err(Error::terminal("bad spec")),
            Some(Step::Requeue) => Ok(Action::requeue()),
            Some(Step::After(d)) => Ok(Action::requeue_after(d)),
            Some(Step::Panic) => panic!("reconciler exploded"),
        }
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

async fn scripted_run(steps: &[Step], use_priority_queue: bool, calls: usize) -> Scripted {
    let r = Scripted::new(steps);
    let opts = Options {
        rate_limiter: limiter(),
        use_priority_queue: Some(use_priority_queue),
        ..Options::default()
    };
    let Running { tx, ctx, h, .. } = launch(unique("scripted"), r.clone(), opts).await;
    send(&tx, "ns", "a").await;
    r.wait_for_calls(calls).await;
    stop(ctx, h).await;
    r
}

#[tokio::test(start_paused = true)]
async fn errors_back_off_with_the_limiters_exact_delays() {
    for pq in [true, false] {
        let r = scripted_run(&[Step::Fail; 5], pq, 6).await;
        assert_eq!(
            r.times(),
            vec![ms(5), ms(10), ms(20), ms(40), ms(80)],
            "priority queue: {pq}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_backs_off_like_an_error() {
    for pq in [true, false] {
        let r = scripted_run(&[Step::Requeue; 3], pq, 4).await;
        assert_eq!(
            r.times(),
            vec![ms(5), ms(10), ms(20)],
            "priority queue: {pq}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_after_waits_and_resets_the_backoff() {
    for pq in [true, false] {
        let steps = [
            Step::Fail,
            Step::Fail,
            Step::After(Duration::from_secs(1)),
            Step::Fail,
        ];
        let r = scripted_run(&steps, pq, 5).await;
        assert_eq!(
            r.times(),
            vec![ms(5), ms(10), Duration::from_secs(1), ms(5)],
            "priority queue: {pq}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn terminal_errors_are_counted_but_not_retried() {
    let r = Scripted::new(&[Step::Terminal]);
    let name = unique("terminal");
    let Running { c, tx, ctx, h } = launch(name.clone(), r.clone(), Options::default()).await;
    send(&tx, "ns", "a").await;
    r.wait_for_calls(1).await;
    // Far past any backoff: nothing comes back.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(r.count(), 1);
    let q = c.queue().await.expect("queue");
    assert_eq!(q.num_requeues(&Request::new("ns", "a")), 0);
    assert_eq!(
        metric(
            "controller_runtime_terminal_reconcile_errors_total",
            &name,
            None
        ),
        Some(1.0)
    );
    assert_eq!(
        metric("controller_runtime_reconcile_errors_total", &name, None),
        Some(1.0)
    );
    assert_eq!(
        metric("controller_runtime_reconcile_total", &name, Some("error")),
        Some(1.0)
    );
    stop(ctx, h).await;
}

#[tokio::test(start_paused = true)]
async fn panics_are_recovered_counted_and_retried() {
    let r = Scripted::new(&[Step::Panic]);
    let name = unique("panic");
    let Running { tx, ctx, h, .. } = launch(name.clone(), r.clone(), Options::default()).await;
    send(&tx, "ns", "a").await;
    r.wait_for_calls(2).await;
    stop(ctx, h).await;
    assert_eq!(r.count(), 2);
    assert_eq!(
        metric("controller_runtime_reconcile_panics_total", &name, None),
        Some(1.0)
    );
    assert_eq!(
        metric("controller_runtime_reconcile_errors_total", &name, None),
        Some(1.0)
    );
    assert_eq!(
        metric("controller_runtime_reconcile_total", &name, Some("success")),
        Some(1.0)
    );
}

#[tokio::test(start_paused = true)]
async fn unrecovered_panics_propagate_out_of_start() {
    let r = Scripted::new(&[Step::Panic]);
    let name = unique("no-recover");
    let opts = Options {
        recover_panic: Some(false),
        ..Options::default()
    };
    let Running { tx, h, .. } = launch(name.clone(), r.clone(), opts).await;
    send(&tx, "ns", "a").await;
    let err = h.await.expect_err("start panics");
    assert!(err.is_panic());
    let payload = err.into_panic();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"reconciler exploded"));
    assert_eq!(
        metric("controller_runtime_reconcile_panics_total", &name, None),
        Some(1.0)
    );
    assert_eq!(r.count(), 1);
}

/// Reconciles "slow" until released; counts every call.
#[derive(Clone, Default)]
struct Gate {
    started: Arc<Notify>,
    release: Arc<Mutex<Option<oneshot::Receiver<()>>>>,
    finished: Arc<AtomicUsize>,
    calls: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl reconcile::Reconciler for Gate {
    async fn reconcile(&self, _ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        self.calls.lock().push(req.name.clone());
        let gate = self.release.lock().take();
        self.started.notify_one();
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Action::done())
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_in_flight_reconciles_and_starts_none_after() {
    for pq in [true, false] {
        let (release, gate) = oneshot::channel();
        let r = Gate::default();
        *r.release.lock() = Some(gate);
        let opts = Options {
            use_priority_queue: Some(pq),
            ..Options::default()
        };
        let Running { tx, ctx, h, .. } = launch(unique("shutdown"), r.clone(), opts).await;
        send(&tx, "ns", "slow").await;
        r.started.notified().await;
        // Queued behind the in-flight reconcile (one worker).
        send(&tx, "ns", "queued").await;
        tokio::time::sleep(ms(10)).await;
        ctx.cancel();
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(
            !h.is_finished(),
            "start returned with a reconcile in flight"
        );
        assert_eq!(r.finished.load(Ordering::SeqCst), 0);
        release.send(()).expect("reconciler waits");
        h.await.expect("start task").expect("start");
        assert_eq!(r.finished.load(Ordering::SeqCst), 1);
        assert_eq!(
            *r.calls.lock(),
            vec!["slow".to_string()],
            "priority queue: {pq}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_watch_added_after_start_delivers() {
    let r = Scripted::new(&[]);
    let c =
        Controller::new(unique("late-watch"), r.clone(), Options::default()).expect("controller");
    let ctx = CancellationToken::new();
    let h = run(&c, &ctx);
    while c.queue().await.is_none() {
        tokio::task::yield_now().await;
    }
    let (tx, src) = channel();
    c.watch(src).await.expect("late watch");
    send(&tx, "ns", "late").await;
    r.wait_for_calls(1).await;
    assert_eq!(r.calls.lock()[0].0, Request::new("ns", "late"));
    stop(ctx, h).await;
}

struct NeverSyncs;

#[async_trait]
impl Source for NeverSyncs {
    async fn start(
        &self,
        _: CancellationToken,
        _: Arc<dyn Queue<Request>>,
    ) -> Result<(), source::Error> {
        Ok(())
    }
    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), source::Error> {
        ctx.cancelled().await;
        Err(source::Error::msg("context cancelled"))
    }
    fn name(&self) -> String {
        "kind source: never/Syncs".into()
    }
}

struct IgnoresCancel;

#[async_trait]
impl Source for IgnoresCancel {
    async fn start(
        &self,
        _: CancellationToken,
        _: Arc<dyn Queue<Request>>,
    ) -> Result<(), source::Error> {
        Ok(())
    }
    async fn wait_for_sync(&self, _: CancellationToken) -> Result<(), source::Error> {
        futures::future::pending().await
    }
    fn name(&self) -> String {
        "stubborn source".into()
    }
}

struct BlockingStart;

#[async_trait]
impl Source for BlockingStart {
    async fn start(
        &self,
        _: CancellationToken,
        _: Arc<dyn Queue<Request>>,
    ) -> Result<(), source::Error> {
        futures::future::pending().await
    }
    fn name(&self) -> String {
        "blocking source".into()
    }
}

async fn start_with(src: impl Source, name: &str) -> Result<(), ControllerError> {
    let opts = Options {
        cache_sync_timeout: Duration::from_secs(10),
        ..Options::default()
    };
    let c = Controller::new(unique(name), Scripted::default(), opts).expect("controller");
    c.watch(src).await.expect("watch");
    let ok = c.watch(Func::new(|_, _| async { Ok(()) })).await;
    assert!(ok.is_ok());
    c.start(CancellationToken::new()).await
}

#[tokio::test(start_paused = true)]
async fn a_source_that_never_syncs_fails_start_after_the_timeout() {
    let err = start_with(NeverSyncs, "never-syncs")
        .await
        .expect_err("sync fails");
    assert!(matches!(err, ControllerError::CacheSync { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("never/Syncs") && msg.contains("failed to wait for"),
        "{msg}"
    );

    let err = start_with(IgnoresCancel, "stubborn")
        .await
        .expect_err("sync times out");
    assert!(err.to_string().contains("stubborn source"), "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_source_whose_start_blocks_fails_start_naming_it() {
    let err = start_with(BlockingStart, "blocking")
        .await
        .expect_err("start times out");
    assert!(
        matches!(err, ControllerError::SourceStartTimeout(_)),
        "{err}"
    );
    assert!(err.to_string().contains("blocking source"), "{err}");
    assert!(err.to_string().contains("non-blocking"), "{err}");
}

#[tokio::test]
async fn a_source_start_error_fails_start() {
    let c = Controller::new(unique("start-err"), Scripted::default(), Options::default())
        .expect("controller");
    let failing =
        Func::new(|_, _| async { Err(source::Error::msg("no RBAC")) }).named("func: rbac");
    c.watch(failing).await.expect("watch");
    let err = c.start(CancellationToken::new()).await.expect_err("fails");
    assert!(matches!(err, ControllerError::SourceStart { .. }));
    assert!(err.to_string().contains("func: rbac") && err.to_string().contains("no RBAC"));
}

#[tokio::test]
async fn start_twice_and_name_rules() {
    let name = unique("twice");
    let c =
        Controller::new(name.clone(), Scripted::default(), Options::default()).expect("controller");
    let ctx = CancellationToken::new();
    let h = run(&c, &ctx);
    while c.queue().await.is_none() {
        tokio::task::yield_now().await;
    }
    let again = c.start(ctx.clone()).await;
    assert!(matches!(again, Err(ControllerError::AlreadyStarted)));
    stop(ctx, h).await;

    let dup = Controller::new(name.clone(), Scripted::default(), Options::default());
    assert!(matches!(dup, Err(ControllerError::DuplicateName(n)) if n == name));
    let skip = Options {
        skip_name_validation: Some(true),
        ..Options::default()
    };
    assert!(Controller::new(name, Scripted::default(), skip).is_ok());
    assert!(matches!(
        Controller::new("", Scripted::default(), Options::default()),
        Err(ControllerError::EmptyName)
    ));
}

/// Sets its flag when dropped: tells a test that a reconcile's future was dropped.
struct DropFlag(Arc<AtomicUsize>, Arc<Notify>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        self.1.notify_one();
    }
}

#[tokio::test(start_paused = true)]
async fn reconciliation_timeout_drops_the_reconcile_cancels_its_token_and_is_counted() {
    let name = unique("timeout");
    let (dropped, calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (token_seen, notify) = (Arc::new(Mutex::new(None)), Arc::new(Notify::new()));
    let r = {
        let (dropped, calls, token_seen, notify) = (
            dropped.clone(),
            calls.clone(),
            token_seen.clone(),
            notify.clone(),
        );
        reconcile::func(move |ctx: CancellationToken, _req| {
            let guard = DropFlag(dropped.clone(), notify.clone());
            calls.fetch_add(1, Ordering::SeqCst);
            *token_seen.lock() = Some(ctx);
            async move {
                let _guard = guard;
                // Never looks at its token: only dropping the future ends it.
                std::future::pending::<()>().await;
                Ok(Action::done())
            }
        })
    };
    let opts = Options {
        reconciliation_timeout: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    let Running { tx, ctx, h, .. } = launch(name.clone(), r, opts).await;
    send(&tx, "ns", "a").await;
    notify.notified().await;
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    // Counted before the future is dropped.
    assert_eq!(
        metric("controller_runtime_reconcile_timeouts_total", &name, None),
        Some(1.0)
    );
    let token = token_seen.lock().clone().expect("reconcile got a token");
    assert!(
        token.is_cancelled(),
        "the dropped reconcile's token is cancelled"
    );
    assert!(!ctx.is_cancelled());
    // Retried with backoff, as after an error.
    while calls.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(metric("controller_runtime_reconcile_total", &name, Some("error")) >= Some(1.0));
    stop(ctx, h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_key_is_never_reconciled_concurrently() {
    const EVENTS: usize = 10_000;
    const KEYS: usize = 50;
    let in_flight = Arc::new(Mutex::new(HashSet::<Request>::new()));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let max_parallel = Arc::new(AtomicUsize::new(0));
    let sent: Arc<Mutex<HashMap<Request, usize>>> = Arc::default();
    let seen: Arc<Mutex<HashMap<Request, usize>>> = Arc::default();
    let progress = Arc::new(Notify::new());
    let r = {
        let (in_flight, overlaps, max_parallel) =
            (in_flight.clone(), overlaps.clone(), max_parallel.clone());
        let (sent, seen, progress) = (sent.clone(), seen.clone(), progress.clone());
        reconcile::func(move |_, req: Request| {
            let (in_flight, overlaps, max_parallel) =
                (in_flight.clone(), overlaps.clone(), max_parallel.clone());
            let (sent, seen, progress) = (sent.clone(), seen.clone(), progress.clone());
            async move {
                let now = sent.lock().get(&req).copied().unwrap_or(0);
                {
                    let mut f = in_flight.lock();
                    if !f.insert(req.clone()) {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    max_parallel.fetch_max(f.len(), Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_micros(200)).await;
                in_flight.lock().remove(&req);
                seen.lock().insert(req, now);
                progress.notify_one();
                Ok(Action::done())
            }
        })
    };
    let opts = Options {
        max_concurrent_reconciles: 8,
        ..Options::default()
    };
    let Running { tx, ctx, h, .. } = launch(unique("no-overlap"), r, opts).await;
    for i in 0..EVENTS {
        let name = format!("k{}", i % KEYS);
        *sent
            .lock()
            .entry(Request::new("ns", name.clone()))
            .or_default() += 1;
        send(&tx, "ns", &name).await;
    }
    // Every key is reconciled after its last event: wait until each saw its final count.
    loop {
        let notified = progress.notified();
        let all = {
            let sent = sent.lock();
            let seen = seen.lock();
            sent.iter().all(|(k, n)| seen.get(k) == Some(n))
        };
        if all {
            break;
        }
        notified.await;
    }
    stop(ctx, h).await;
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    assert!(max_parallel.load(Ordering::SeqCst) <= 8);
    assert_eq!(seen.lock().len(), KEYS);
}

#[tokio::test(start_paused = true)]
async fn metrics_start_at_zero_and_match_the_counts() {
    let name = unique("metrics");
    let steps = [
        Step::Fail,
        Step::Requeue,
        Step::After(ms(50)),
        Step::Terminal,
    ];
    let r = Scripted::new(&steps);
    let opts = Options {
        max_concurrent_reconciles: 3,
        ..Options::default()
    };
    let Running { c, tx, ctx, h } = launch(name.clone(), r.clone(), opts).await;
    while c.queue().await.is_none() {
        tokio::task::yield_now().await;
    }
    for result in ["success", "error", "requeue", "requeue_after"] {
        let v = metric("controller_runtime_reconcile_total", &name, Some(result));
        assert_eq!(v, Some(0.0), "{result}");
    }
    for family in [
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_active_workers",
    ] {
        assert_eq!(metric(family, &name, None), Some(0.0), "{family}");
    }
    assert_eq!(
        metric("controller_runtime_max_concurrent_reconciles", &name, None),
        Some(3.0)
    );

    // Fail -> Requeue -> RequeueAfter -> Terminal, then a fresh event -> success.
    send(&tx, "ns", "a").await;
    r.wait_for_calls(4).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    send(&tx, "ns", "a").await;
    r.wait_for_calls(5).await;
    tokio::time::sleep(ms(1)).await;
    stop(ctx, h).await;
    let total = |r| metric("controller_runtime_reconcile_total", &name, Some(r));
    assert_eq!(total("error"), Some(2.0));
    assert_eq!(total("requeue"), Some(1.0));
    assert_eq!(total("requeue_after"), Some(1.0));
    assert_eq!(total("success"), Some(1.0));
    assert_eq!(
        metric("controller_runtime_reconcile_errors_total", &name, None),
        Some(2.0)
    );
    assert_eq!(
        metric(
            "controller_runtime_terminal_reconcile_errors_total",
            &name,
            None
        ),
        Some(1.0)
    );
    assert_eq!(
        metric("controller_runtime_reconcile_time_seconds", &name, None),
        Some(5.0)
    );
    assert_eq!(
        metric("controller_runtime_active_workers", &name, None),
        Some(0.0)
    );
    assert_eq!(r.count(), 5);
}

#[test]
fn reconcile_time_has_controller_runtimes_buckets() {
    let expected = [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ];
    assert_eq!(
        ctrl_runtime::controller::metrics::RECONCILE_TIME_BUCKETS,
        &expected
    );
}

#[tokio::test]
async fn every_reconcile_gets_a_fresh_v4_reconcile_id() {
    let ids = Arc::new(Mutex::new(Vec::new()));
    let ids2 = ids.clone();
    let n = Arc::new(Notify::new());
    let n2 = n.clone();
    let r = reconcile::func(move |_, _| {
        let (ids, n) = (ids2.clone(), n2.clone());
        async move {
            ids.lock().push(reconcile::reconcile_id());
            n.notify_one();
            Ok(Action::done())
        }
    });
    let Running { tx, ctx, h, .. } = launch(unique("ids"), r, Options::default()).await;
    send(&tx, "ns", "a").await;
    n.notified().await;
    send(&tx, "ns", "b").await;
    n.notified().await;
    stop(ctx, h).await;
    let ids: Vec<uuid::Uuid> = ids
        .lock()
        .iter()
        .map(|i| i.expect("inside a reconcile"))
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(ids.iter().all(|i| i.get_version_num() == 4));
    assert_eq!(reconcile::reconcile_id(), None);
}

#[tokio::test]
async fn channel_fans_out_to_every_controller_and_applies_predicates() {
    let (tx, rx) = mpsc::channel(16);
    let only_keep = predicate::new_predicate_funcs(|o: &ConfigMap| {
        o.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("keep"))
    });
    let src = Arc::new(
        Channel::new(rx, EnqueueRequestForObject)
            .with_buffer_size(4)
            .with_predicate(only_keep),
    );
    let ctx = CancellationToken::new();
    let (a, b) = (Scripted::default(), Scripted::default());
    let ca = Controller::new(unique("fan-a"), a.clone(), Options::default()).expect("controller");
    let cb = Controller::new(unique("fan-b"), b.clone(), Options::default()).expect("controller");
    ca.watch(src.clone()).await.expect("watch");
    cb.watch(src.clone()).await.expect("watch");
    let (ha, hb) = (run(&ca, &ctx), run(&cb, &ctx));
    send(&tx, "ns", "drop-me").await;
    send(&tx, "ns", "keep-me").await;
    a.wait_for_calls(1).await;
    b.wait_for_calls(1).await;
    ctx.cancel();
    ha.await.expect("task").expect("start");
    hb.await.expect("task").expect("start");
    for r in [a, b] {
        let names: Vec<_> = r.calls.lock().iter().map(|(q, _)| q.name.clone()).collect();
        assert_eq!(names, vec!["keep-me".to_string()]);
    }
}

#[tokio::test]
async fn a_drained_channel_cannot_start_again() {
    let (tx, rx) = mpsc::channel::<GenericEvent<ConfigMap>>(1);
    drop(tx);
    let src = Channel::new(rx, EnqueueRequestForObject);
    let q: Arc<dyn Queue<Request>> = Arc::new(ctrl_runtime::workqueue::RateLimitingQueue::new(
        Default::default(),
    ));
    let ctx = CancellationToken::new();
    src.start(ctx.clone(), q.clone())
        .await
        .expect("first start");
    // The sync loop sees the closed stream and marks the source drained.
    let mut second = src.start(ctx.clone(), q.clone()).await;
    while second.is_ok() {
        tokio::task::yield_now().await;
        second = src.start(ctx.clone(), q.clone()).await;
    }
    assert!(matches!(second, Err(source::Error::Drained(_))));
}

#[tokio::test]
async fn func_source_gets_the_controller_queue() {
    let r = Scripted::default();
    let c = Controller::new(unique("func-src"), r.clone(), Options::default()).expect("controller");
    let src = Func::new(|_ctx, q: Arc<dyn Queue<Request>>| async move {
        q.add(Request::new("ns", "from-func"));
        Ok(())
    });
    c.watch(src).await.expect("watch");
    let ctx = CancellationToken::new();
    let h = run(&c, &ctx);
    r.wait_for_calls(1).await;
    ctx.cancel();
    h.await.expect("task").expect("start");
    assert_eq!(r.calls.lock()[0].0, Request::new("ns", "from-func"));
}
