//! Hard reconcile deadlines over real HTTP: a reconciler stuck in an API call (an
//! envtest latency fault holds its GET for an hour) is cut at its
//! `reconciliation_timeout`, and at the end of the manager's grace period. In both
//! cases the reconcile's future is dropped, so the pending request is abandoned.

mod manager_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl_envtest::{FaultMatch, Verb};
use ctrl_runtime::controller::{Controller, Options};
use ctrl_runtime::event::GenericEvent;
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::manager::Error;
use ctrl_runtime::metrics::registry;
use ctrl_runtime::reconcile::{self, Action, Request};
use ctrl_runtime::source::Channel;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta};
use manager_common::{env, finished, manager, quiet, run};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Counts its drops and wakes the test: the reconcile's future was dropped.
struct DropFlag(Arc<AtomicUsize>, Arc<Notify>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        self.1.notify_one();
    }
}

/// What a test sees of the stuck reconciler.
#[derive(Clone, Default)]
struct Seen {
    started: Arc<Notify>,
    dropped: Arc<AtomicUsize>,
    dropped_notify: Arc<Notify>,
}

/// A reconciler that GETs the ConfigMap `slow`, which the latency fault holds for an
/// hour; it never looks at its token.
fn stuck(client: kube::Client, seen: &Seen) -> impl reconcile::Reconciler {
    let seen = seen.clone();
    reconcile::func(move |_ctx: CancellationToken, _req: Request| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let guard = DropFlag(seen.dropped.clone(), seen.dropped_notify.clone());
        let started = seen.started.clone();
        async move {
            let _guard = guard;
            started.notify_one();
            api.get_opt("slow").await.map_err(reconcile::Error::new)?;
            Ok(Action::done())
        }
    })
}

/// A controller named `name` fed by a channel, with one event already sent.
async fn controller(
    name: &str,
    r: impl reconcile::Reconciler,
    opts: Options,
) -> (Controller, mpsc::Sender<GenericEvent<ConfigMap>>) {
    let c = Controller::new(name, r, opts).expect("controller");
    let (tx, rx) = mpsc::channel(8);
    c.watch(Channel::new(rx, EnqueueRequestForObject))
        .await
        .expect("watch");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("slow".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    tx.send(GenericEvent::new(Arc::new(cm)))
        .await
        .expect("send");
    (c, tx)
}

fn counter(family: &str, controller: &str) -> f64 {
    registry()
        .gather()
        .iter()
        .filter(|mf| mf.name() == family)
        .flat_map(|mf| mf.get_metric())
        .find(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "controller" && l.value() == controller)
        })
        .map_or(0.0, |m| m.get_counter().get_value())
}

fn hold_slow_gets(env: &ctrl_envtest::Environment) {
    let slow = FaultMatch::any()
        .verb(Verb::Get)
        .resource("configmaps")
        .name("slow");
    env.faults().add_latency(slow, Duration::from_secs(3600));
}

/// Waits (up to 20 s) for `n`: an outcome, not a speed.
async fn notified(n: &Notify, what: &str) {
    tokio::time::timeout(Duration::from_secs(20), n.notified())
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test]
async fn a_reconcile_stuck_in_an_api_call_is_dropped_at_its_timeout() {
    let env = env().await;
    hold_slow_gets(&env);
    let seen = Seen::default();
    let opts = Options {
        reconciliation_timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let (c, _tx) = controller("stuck-timeout", stuck(env.client(), &seen), opts).await;
    let ctx = CancellationToken::new();
    let task = {
        let (c, ctx) = (c.clone(), ctx.clone());
        tokio::spawn(async move { c.start(ctx).await })
    };
    notified(&seen.dropped_notify, "the stuck reconcile was dropped").await;
    assert!(!ctx.is_cancelled());
    assert!(
        counter(
            "controller_runtime_reconcile_timeouts_total",
            "stuck-timeout"
        ) >= 1.0
    );
    // Retried with backoff, as after an error: it is stuck again, and dropped again.
    notified(&seen.dropped_notify, "the retry was dropped too").await;
    assert!(seen.dropped.load(Ordering::SeqCst) >= 2);
    assert!(counter("controller_runtime_reconcile_errors_total", "stuck-timeout") >= 2.0);
    ctx.cancel();
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("controller stopped")
        .expect("task")
        .expect("start");
}

#[tokio::test]
async fn a_reconcile_stuck_in_an_api_call_is_dropped_when_the_grace_period_ends() {
    let env = env().await;
    hold_slow_gets(&env);
    let seen = Seen::default();
    let (c, _tx) = controller(
        "stuck-shutdown",
        stuck(env.client(), &seen),
        Options::default(),
    )
    .await;
    let mgr = manager(
        &env,
        ctrl_runtime::manager::Options {
            graceful_shutdown_timeout: Duration::from_millis(300),
            ..quiet()
        },
    );
    mgr.add(c).expect("add");
    let ctx = CancellationToken::new();
    let h = run(&mgr, &ctx);
    notified(&seen.started, "the reconcile started").await;
    ctx.cancel();
    let err = finished(h).await.expect_err("grace period overrun");
    match &err {
        Error::GracefulShutdownTimeout { pending, .. } => {
            assert_eq!(pending, &vec!["controller stuck-shutdown".to_string()]);
        }
        other => panic!("unexpected error {other:?}"),
    }
    notified(&seen.dropped_notify, "the stuck reconcile was dropped").await;
    assert_eq!(seen.dropped.load(Ordering::SeqCst), 1);
    // Not a reconciliation timeout: shutdown is the parent's cancellation (as Go).
    assert_eq!(
        counter(
            "controller_runtime_reconcile_timeouts_total",
            "stuck-shutdown"
        ),
        0.0
    );
}
