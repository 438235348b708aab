//! The manager's lifecycle on envtest (controller-runtime's `manager_test.go` "Start"
//! and "Add" cases and `runnable_group_test.go`): start and stop order observed by
//! runnables recording instants, errors, grace period, late adds, start twice, and a dropped
//! `start` future aborting what it started (a crashed process, as the simulation crashes one).

use crate::manager_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use ctrl_runtime::cache::Reader;
use ctrl_runtime::manager::{BoxError, Error, Group, Manager, Runnable, RunnableFunc};
use manager_common::{env, launch, manager, once, quiet};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

type Log = Arc<Mutex<Vec<(String, &'static str, Instant)>>>;

/// Records when it starts, when it is ready and when it sees the cancel; lingers
/// 20 ms before returning so each group's stop is strictly after the previous one's.
struct Recorder {
    name: &'static str,
    group: Group,
    ready_after: Duration,
    log: Log,
}

impl Recorder {
    fn new(name: &'static str, group: Group, log: &Log) -> Self {
        Self {
            name,
            group,
            ready_after: Duration::ZERO,
            log: log.clone(),
        }
    }
    fn note(&self, what: &'static str) {
        self.log
            .lock()
            .push((self.name.to_string(), what, Instant::now()));
    }
}

#[async_trait]
impl Runnable for Recorder {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        self.note("start");
        ctx.cancelled().await;
        self.note("stop");
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    }
    fn group(&self) -> Group {
        self.group
    }
    async fn wait_ready(&self, _ctx: CancellationToken) -> bool {
        tokio::time::sleep(self.ready_after).await;
        self.note("ready");
        true
    }
    fn name(&self) -> String {
        self.name.to_string()
    }
}

fn at(log: &Log, name: &str, what: &str) -> Instant {
    log.lock()
        .iter()
        .find(|(n, w, _)| n == name && *w == what)
        .map(|(_, _, t)| *t)
        .unwrap_or_else(|| panic!("{name} never recorded {what}: {:?}", log.lock()))
}

#[tokio::test]
async fn groups_start_and_stop_in_controller_runtime_order() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let log: Log = Arc::default();
    // Added in reverse, so order comes from the groups, not from add order.
    mgr.add(Recorder::new("leader", Group::LeaderElection, &log))
        .unwrap();
    mgr.add(Recorder::new("other", Group::Others, &log))
        .unwrap();
    mgr.add(Recorder::new("warmup", Group::Warmup, &log))
        .unwrap();
    let mut cache = Recorder::new("cache", Group::Caches, &log);
    cache.ready_after = Duration::from_millis(50);
    mgr.add(cache).unwrap();
    mgr.add(Recorder::new("webhook", Group::Webhooks, &log))
        .unwrap();
    mgr.add(Recorder::new("http", Group::HttpServers, &log))
        .unwrap();

    launch(&mgr).await.stop().await.expect("clean stop");

    let start = |n| at(&log, n, "start");
    let stop = |n| at(&log, n, "stop");
    assert!(start("http") <= start("webhook"));
    assert!(start("webhook") <= start("cache"));
    assert!(
        at(&log, "cache", "ready") <= start("other"),
        "others wait for the caches to sync"
    );
    assert!(start("other") <= start("warmup"));
    assert!(start("warmup") <= start("leader"));
    assert!(stop("other") < stop("leader"));
    assert!(stop("leader") < stop("warmup"));
    assert!(stop("warmup") < stop("cache"));
    assert!(stop("cache") < stop("webhook"));
    assert!(stop("webhook") < stop("http"));
}

#[tokio::test]
async fn the_cache_syncs_before_other_runnables_start() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let env = env().await;
    let cms: kube::Api<ConfigMap> = kube::Api::namespaced(env.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("seen-at-start".into());
    cms.create(&Default::default(), &cm).await.unwrap();

    let mgr = manager(&env, quiet());
    let _ = mgr.cache().get_informer::<ConfigMap>();
    let (fire, rx) = once();
    let client = mgr.client();
    mgr.add(RunnableFunc::new(move |_ctx| {
        let client = client.clone();
        let tx = fire();
        async move {
            let seen = client.get::<ConfigMap>("default", "seen-at-start").await;
            if seen.is_ok()
                && let Some(tx) = tx
            {
                let _ = tx.send(());
            }
            Ok(())
        }
    }))
    .unwrap();
    let running = launch(&mgr).await;
    rx.await.expect("the cached read sees the object at once");
    running.stop().await.unwrap();
}

#[tokio::test]
async fn a_failing_runnable_stops_the_rest_and_its_error_is_returned() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    mgr.add(RunnableFunc::new(move |ctx| {
        let d = d.clone();
        async move {
            ctx.cancelled().await;
            d.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }))
    .unwrap();
    mgr.add(
        RunnableFunc::new(|_| async { Err::<(), BoxError>("expected error".into()) })
            .named("failing"),
    )
    .unwrap();
    mgr.add(RunnableFunc::new(|_| async { Ok(()) })).unwrap();

    let err = mgr.start(CancellationToken::new()).await.unwrap_err();
    match &err {
        Error::Runnable { name, source } => {
            assert_eq!(name, "failing");
            assert_eq!(source.to_string(), "expected error");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(err.to_string(), "runnable failing failed: expected error");
    assert_eq!(
        done.load(Ordering::SeqCst),
        1,
        "the others were stopped and awaited"
    );
}

#[tokio::test]
async fn a_panicking_runnable_is_an_error() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    mgr.add(
        RunnableFunc::new(|_| async { panic!("boom") })
            .named("panicky")
            .with_leader_election(false),
    )
    .unwrap();
    let err = mgr.start(CancellationToken::new()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Panicked { name, message } if name == "panicky" && message == "boom"),
        "{err:?}"
    );
}

fn stubborn(name: &'static str, linger: Duration) -> RunnableFunc {
    RunnableFunc::new(move |ctx| async move {
        ctx.cancelled().await;
        tokio::time::sleep(linger).await;
        Ok(())
    })
    .named(name)
}

/// On virtual time (the in-memory client: no socket), so the wait is the grace period to
/// the instant.
#[tokio::test(start_paused = true)]
async fn the_grace_period_is_enforced_and_names_who_did_not_stop() {
    let env = env().await;
    let opts = ctrl_runtime::manager::Options {
        graceful_shutdown_timeout: Duration::from_millis(200),
        ..quiet()
    };
    let mgr = Manager::new(env.in_memory_client(), opts).expect("manager");
    mgr.add(stubborn("quick", Duration::ZERO)).unwrap();
    mgr.add(stubborn("stuck", Duration::from_secs(30))).unwrap();
    let running = launch(&mgr).await;
    let t = Instant::now();
    let err = running.stop().await.unwrap_err();
    assert_eq!(
        t.elapsed(),
        Duration::from_millis(200),
        "not the grace period"
    );
    match &err {
        Error::GracefulShutdownTimeout { timeout, pending } => {
            assert_eq!(*timeout, Duration::from_millis(200));
            assert_eq!(pending, &vec!["stuck".to_string()]);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "failed waiting for all runnables to end within grace period of 200ms: still running: stuck"
    );
}

#[tokio::test]
async fn a_runnable_error_and_a_timeout_are_both_returned() {
    let env = env().await;
    let mgr = manager(
        &env,
        ctrl_runtime::manager::Options {
            graceful_shutdown_timeout: Duration::from_millis(1),
            ..quiet()
        },
    );
    mgr.add(RunnableFunc::new(|_| async {
        Err::<(), BoxError>("not feeling like that".into())
    }))
    .unwrap();
    mgr.add(stubborn("stuck", Duration::from_secs(30))).unwrap();
    let err = mgr.start(CancellationToken::new()).await.unwrap_err();
    let all = err.errors();
    assert_eq!(all.len(), 2, "{err}");
    assert!(matches!(all[0], Error::Runnable { .. }));
    assert!(matches!(all[1], Error::GracefulShutdownTimeout { .. }));
    assert!(
        err.to_string()
            .starts_with("[runnable RunnableFunc failed: not feeling like that, failed waiting")
    );
}

#[tokio::test]
async fn a_zero_grace_period_does_not_wait() {
    let env = env().await;
    let mgr = manager(
        &env,
        ctrl_runtime::manager::Options {
            graceful_shutdown_timeout: Duration::ZERO,
            ..quiet()
        },
    );
    // The runnable cannot finish until the test lets it, after `start` returned.
    let release = CancellationToken::new();
    let finished = Arc::new(AtomicUsize::new(0));
    let (r, f) = (release.clone(), finished.clone());
    mgr.add(RunnableFunc::new(move |ctx| {
        let (r, f) = (r.clone(), f.clone());
        async move {
            ctx.cancelled().await;
            r.cancelled().await;
            f.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }))
    .unwrap();
    let running = launch(&mgr).await;
    running
        .stop()
        .await
        .expect("no error with a zero grace period");
    assert_eq!(finished.load(Ordering::SeqCst), 0, "start did not wait");
    release.cancel();
}

#[tokio::test]
async fn an_unbounded_grace_period_waits_for_everyone() {
    let env = env().await;
    let mgr = manager(
        &env,
        ctrl_runtime::manager::Options {
            graceful_shutdown_timeout: Duration::MAX,
            ..quiet()
        },
    );
    mgr.add(stubborn("slow", Duration::from_millis(300)))
        .unwrap();
    mgr.add(stubborn("slower", Duration::from_millis(500)))
        .unwrap();
    let running = launch(&mgr).await;
    let t = Instant::now();
    running.stop().await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(500));
}

#[tokio::test]
async fn runnables_added_after_start_start_at_once() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let running = launch(&mgr).await;
    assert!(mgr.group_started(Group::Caches));
    let mut waits = Vec::new();
    for leader in [true, false] {
        let (fire, rx) = once();
        mgr.add(
            RunnableFunc::new(move |_| {
                let tx = fire();
                async move {
                    if let Some(tx) = tx {
                        let _ = tx.send(());
                    }
                    Ok(())
                }
            })
            .with_leader_election(leader),
        )
        .unwrap();
        waits.push(rx);
    }
    for rx in waits {
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .unwrap()
            .unwrap();
    }
    running.stop().await.unwrap();
}

#[tokio::test]
async fn start_twice_is_an_error_and_adding_after_stop_is_refused() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let running = launch(&mgr).await;
    let err = mgr.start(running.ctx.clone()).await.unwrap_err();
    assert!(matches!(err, Error::AlreadyStarted));
    assert_eq!(err.to_string(), "manager already started");
    running.stop().await.unwrap();
    let err = mgr
        .add(RunnableFunc::new(|_| async { Ok(()) }))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "can't accept new runnable as stop procedure is already engaged"
    );
}

#[tokio::test]
async fn a_cancelled_context_returns_at_once_without_starting_leaders() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    mgr.add(RunnableFunc::new(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        async { Ok(()) }
    }))
    .unwrap();
    let ctx = CancellationToken::new();
    ctx.cancel();
    mgr.start(ctx)
        .await
        .expect("a cancelled context is not an error");
    assert_eq!(started.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_runnable_that_cannot_become_ready_stops_the_manager() {
    struct NeverReady;
    #[async_trait]
    impl Runnable for NeverReady {
        async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
            ctx.cancelled().await;
            Ok(())
        }
        fn group(&self) -> Group {
            Group::Caches
        }
        async fn wait_ready(&self, _ctx: CancellationToken) -> bool {
            false
        }
    }
    let env = env().await;
    let mgr = manager(&env, quiet());
    mgr.add(NeverReady).unwrap();
    let err = mgr.start(CancellationToken::new()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotReady {
                group: "caches",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_probe_address_in_use_fails_new() {
    let env = env().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = Manager::new(
        env.client(),
        ctrl_runtime::manager::Options {
            health_probe_bind_address: addr.clone(),
            ..quiet()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Bind {
                kind: "health probe",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&addr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_racing_start_and_stop_either_run_or_are_refused() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let ran = Arc::new(AtomicUsize::new(0));
    let ctx = CancellationToken::new();
    let adders: Vec<_> = (0..200)
        .map(|i| {
            let (mgr, ran) = (mgr.clone(), ran.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_micros(i * 50)).await;
                let r = RunnableFunc::new(move |ctx| {
                    let ran = ran.clone();
                    async move {
                        ran.fetch_add(1, Ordering::SeqCst);
                        ctx.cancelled().await;
                        Ok(())
                    }
                })
                .with_leader_election(i % 2 == 0);
                mgr.add(r).is_ok()
            })
        })
        .collect();
    let h = {
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        tokio::spawn(async move { mgr.start(ctx).await })
    };
    tokio::time::sleep(Duration::from_millis(4)).await;
    ctx.cancel();
    h.await.unwrap().expect("clean stop");
    let mut accepted = 0;
    for a in adders {
        accepted += usize::from(a.await.unwrap());
    }
    assert!(accepted > 0);
    assert!(
        ran.load(Ordering::SeqCst) <= accepted,
        "only accepted runnables ran (some accepted ones may be dropped unstarted)"
    );
    assert!(mgr.add(RunnableFunc::new(|_| async { Ok(()) })).is_err());
}

/// Fires its signal when dropped: the runnable's future ended, by return or by abort.
struct OnDrop(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test]
async fn dropping_the_start_future_aborts_every_runnable_at_once() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let (started, started_rx) = once();
    let (dropped, dropped_rx) = once();
    // Deaf to its context: only an abort ends it.
    let deaf = RunnableFunc::new(move |_ctx| {
        let (started, guard) = (started(), OnDrop(dropped()));
        async move {
            let _guard = guard;
            if let Some(tx) = started {
                let _ = tx.send(());
            }
            std::future::pending::<()>().await;
            Ok(())
        }
    })
    .named("deaf");
    mgr.add(deaf).unwrap();
    let ctx = CancellationToken::new();
    tokio::select! {
        r = mgr.start(ctx.clone()) => panic!("start returned before anything stopped it: {r:?}"),
        s = started_rx => s.expect("the runnable started"),
    }
    // `start`'s future is dropped here, as a crashed process ends: its context was never
    // cancelled, so the runnable ends only if the manager aborted it.
    assert!(!ctx.is_cancelled());
    tokio::time::timeout(Duration::from_secs(10), dropped_rx)
        .await
        .expect("the runnable was aborted when start's future was dropped")
        .expect("its drop signal");
}
