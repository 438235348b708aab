//! What a reconcile tells the logs, and where a requeued item goes, against
//! ctrl-envtest: the `reconcile` tracing span carries controller-runtime's logger keys
//! (controller, controllerGroup, controllerKind, namespace, name, reconcileID — a fresh
//! UUID per reconcile, the same one `reconcile::reconcile_id()` returns inside it), and
//! `Action::with_priority` makes the priority queue hand the requeued item back at that
//! priority. A typed controller's span names its request by its `Debug` form instead.
//!
//! The span capture is a minimal `tracing::Subscriber` installed as the global default
//! once per test binary (a thread-scoped default is not enough: callsite interest is
//! cached process-wide, and a test running without the subscriber on another thread
//! can switch the `reconcile` span off); the span test picks its spans by namespace.

mod support;

mod field_capture;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options as CacheOptions};
use ctrl_runtime::controller::{Controller, Options};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::{self, Action, Request};
use ctrl_runtime::source::Kind;
use ctrl_runtime::workqueue::{AddOpts, PriorityQueue, Queue, QueueConfig};
use field_capture::{Fields, Visitor};
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use support::eventually;
use tokio_util::sync::CancellationToken;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Each reconcile's request and the `reconcile_id()` it saw.
type Seen = Vec<(Request, Option<uuid::Uuid>)>;

/// Records the fields of every span named `reconcile`.
#[derive(Default)]
struct SpanCapture {
    next: AtomicU64,
    reconciles: Mutex<Vec<Fields>>,
}

impl Subscriber for SpanCapture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        if attrs.metadata().name() == "reconcile" {
            let mut fields = Fields::new();
            attrs.record(&mut Visitor(&mut fields));
            self.reconciles.lock().push(fields);
        }
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The process-wide capture, installed on first use.
fn capture() -> Arc<SpanCapture> {
    static CAPTURE: OnceLock<Arc<SpanCapture>> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let c = Arc::new(SpanCapture::default());
            tracing::subscriber::set_global_default(c.clone()).expect("no other global subscriber");
            c
        })
        .clone()
}

/// Forwards to a [`PriorityQueue`], logging each item handed out with its priority.
struct Recording {
    inner: PriorityQueue<Request>,
    handed_out: Arc<Mutex<Vec<(Request, i32)>>>,
}

impl Queue<Request> for Recording {
    fn add(&self, item: Request) {
        self.inner.add(item)
    }
    fn add_after(&self, item: Request, delay: Duration) {
        Queue::add_after(&self.inner, item, delay)
    }
    fn add_rate_limited(&self, item: Request) {
        Queue::add_rate_limited(&self.inner, item)
    }
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        Queue::add_with_opts(&self.inner, opts, item)
    }
    fn get_boxed(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
        self.inner
            .get_boxed()
            .map(|got| {
                if let Some(g) = &got {
                    self.handed_out.lock().push(g.clone());
                }
                got
            })
            .boxed()
    }
    fn done(&self, item: &Request) {
        Queue::done(&self.inner, item)
    }
    fn forget(&self, item: &Request) {
        Queue::forget(&self.inner, item)
    }
    fn num_requeues(&self, item: &Request) -> usize {
        Queue::num_requeues(&self.inner, item)
    }
    fn len(&self) -> usize {
        Queue::len(&self.inner)
    }
    fn shut_down(&self) {
        Queue::shut_down(&self.inner)
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Queue::shut_down_with_drain(&self.inner)
    }
    fn shutting_down(&self) -> bool {
        Queue::shutting_down(&self.inner)
    }
    fn is_priority(&self) -> bool {
        Queue::is_priority(&self.inner)
    }
}

fn opts() -> Options {
    Options {
        skip_name_validation: Some(true),
        cache_sync_timeout: Duration::from_secs(30),
        group: String::new(),
        kind: "ConfigMap".into(),
        ..Default::default()
    }
}

/// envtest with namespace `ns`, a started cache, and a started controller watching
/// ConfigMaps; returns what creates ConfigMaps in `ns` and the context stopping all.
async fn run_controller(
    ns: &str,
    name: &str,
    reconciler: impl reconcile::Reconciler,
    opts: Options,
) -> (Environment, Api<ConfigMap>, CancellationToken) {
    let env = Environment::start().await.expect("envtest");
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(env.client())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
    let cache = Cache::new(env.client(), CacheOptions::default());
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    let controller = Controller::new(name, reconciler, opts).expect("controller");
    controller
        .watch(Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject))
        .await
        .expect("watch");
    let x = ctx.clone();
    tokio::spawn(async move { controller.start(x).await });
    let cms = Api::namespaced(env.client(), ns);
    (env, cms, ctx)
}

async fn create(api: &Api<ConfigMap>, name: &str) {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create configmap");
}

#[tokio::test]
async fn every_reconcile_runs_in_a_span_with_controller_runtimes_logger_keys() {
    let capture = capture();
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let r = {
        let seen = seen.clone();
        reconcile::func(move |_ctx, req: Request| {
            let seen = seen.clone();
            async move {
                seen.lock().push((req, reconcile::reconcile_id()));
                Ok(Action::done())
            }
        })
    };
    let (_env, cms, ctx) = run_controller("spans", "span-controller", r, opts()).await;
    create(&cms, "one").await;
    create(&cms, "two").await;
    let in_ns = |s: &Seen| s.iter().filter(|(r, _)| r.namespace == "spans").count();
    eventually("both objects reconciled", || in_ns(&seen.lock()) >= 2).await;
    ctx.cancel();

    let spans: Vec<Fields> = capture
        .reconciles
        .lock()
        .iter()
        .filter(|f| f.get("namespace").is_some_and(|n| n == "spans"))
        .cloned()
        .collect();
    let mut ids = Vec::new();
    for name in ["one", "two"] {
        let span = spans
            .iter()
            .find(|f| f.get("name").is_some_and(|n| n == name))
            .unwrap_or_else(|| panic!("no reconcile span for spans/{name}: {spans:?}"));
        assert_eq!(span["controller"], "span-controller");
        assert_eq!(span["controllerGroup"], "");
        assert_eq!(span["controllerKind"], "ConfigMap");
        assert_eq!(span["namespace"], "spans");
        let id: uuid::Uuid = span["reconcileID"].parse().expect("reconcileID is a UUID");
        let inside = seen
            .lock()
            .iter()
            .find(|(r, _)| r.namespace == "spans" && r.name == name)
            .and_then(|(_, id)| *id);
        assert_eq!(
            inside,
            Some(id),
            "the reconciler sees the span's reconcileID"
        );
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "each reconcile gets its own reconcileID");
}

#[tokio::test]
async fn a_requeue_with_priority_comes_back_from_the_priority_queue_at_that_priority() {
    capture();
    let handed_out: Arc<Mutex<Vec<(Request, i32)>>> = Arc::default();
    let calls: Arc<Mutex<usize>> = Arc::default();
    let r = {
        let calls = calls.clone();
        reconcile::func(move |_ctx, req: Request| {
            let calls = calls.clone();
            async move {
                if req.namespace != "prio" {
                    return Ok(Action::done());
                }
                let mut n = calls.lock();
                *n += 1;
                Ok(match *n {
                    1 => Action::requeue_after(Duration::from_millis(1)).with_priority(7),
                    2 => Action::requeue().with_priority(3),
                    _ => Action::done(),
                })
            }
        })
    };
    let queue_log = handed_out.clone();
    let opts = Options {
        new_queue: Some(Arc::new(move |name, limiter| {
            let inner = PriorityQueue::new(QueueConfig::new(name).with_rate_limiter(limiter));
            Arc::new(Recording {
                inner,
                handed_out: queue_log.clone(),
            })
        })),
        ..opts()
    };
    let (_env, cms, ctx) = run_controller("prio", "prio-controller", r, opts).await;
    create(&cms, "p").await;
    eventually("three reconciles of prio/p", || *calls.lock() >= 3).await;
    ctx.cancel();

    let want = Request::new("prio", "p");
    let priorities: Vec<i32> = handed_out
        .lock()
        .iter()
        .filter(|(r, _)| *r == want)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(priorities.len(), 3, "{priorities:?}");
    assert_eq!(
        priorities[1..],
        [7, 3],
        "requeue_after and requeue keep the priority the reconciler asked for"
    );
}

/// A typed controller's request, as its span shows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ShardKey(&'static str, u32);

#[tokio::test]
async fn a_typed_controllers_span_names_its_request() {
    let capture = capture();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = {
        let seen = seen.clone();
        reconcile::typed_func(move |_ctx, req: ShardKey| {
            let seen = seen.clone();
            async move {
                seen.lock().push(req);
                Ok(Action::done())
            }
        })
    };
    let controller =
        Controller::new("typed-span-controller", r, Options::default()).expect("controller");
    let feed = ctrl_runtime::source::Func::new(|_ctx, q: Arc<dyn Queue<ShardKey>>| async move {
        q.add(ShardKey("shard-a", 7));
        Ok(())
    });
    controller.watch(feed).await.expect("watch");
    let ctx = CancellationToken::new();
    let (c, x) = (controller.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    eventually("the typed request reconciled", || !seen.lock().is_empty()).await;
    ctx.cancel();
    assert_eq!(seen.lock()[0], ShardKey("shard-a", 7));
    let spans = capture.reconciles.lock().clone();
    let span = spans
        .iter()
        .find(|f| {
            f.get("controller")
                .is_some_and(|c| c == "typed-span-controller")
        })
        .unwrap_or_else(|| panic!("no reconcile span: {spans:?}"));
    assert_eq!(span["request"], r#"ShardKey("shard-a", 7)"#);
    assert!(
        !span.contains_key("namespace") && !span.contains_key("name"),
        "{span:?}"
    );
    assert!(span["reconcileID"].parse::<uuid::Uuid>().is_ok());
}
