//! A reconcile that loses an optimistic-concurrency race (409 Conflict) is requeued
//! through the rate limiter like any error, but logged as one short INFO line naming the
//! write, not as a "Reconciler error" with the server's Status dump; any other error still
//! is an ERROR. Against ctrl-envtest, with the conflict from a stale `resourceVersion`,
//! through kube's `Api` and through ctrl's client.
//!
//! The log capture is a minimal `tracing::Subscriber`, the global default of this test
//! binary (see `controller_span.rs` for why not a thread-scoped one).

mod field_capture;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options as CacheOptions};
use ctrl_runtime::client::{Client, ObjectWriter};
use ctrl_runtime::controller::{Controller, Options};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::reconcile::{self, Action, Request};
use ctrl_runtime::source::Kind;
use field_capture::Visitor;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One log event: its level and fields (`message` among them).
type Line = (Level, BTreeMap<String, String>);

#[derive(Default)]
struct LogCapture {
    next: AtomicU64,
    lines: Mutex<Vec<Line>>,
}

impl Subscriber for LogCapture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.lines.lock().push((*event.metadata().level(), fields));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn capture() -> Arc<LogCapture> {
    static CAPTURE: OnceLock<Arc<LogCapture>> = OnceLock::new();
    CAPTURE
        .get_or_init(|| {
            let c = Arc::new(LogCapture::default());
            tracing::subscriber::set_global_default(c.clone()).expect("no other global subscriber");
            c
        })
        .clone()
}

/// The ConfigMap `name` with an outdated `resourceVersion`: an update of it is a 409.
fn stale(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".into(), "v".into())])),
        ..Default::default()
    }
}

/// Reconciles `default/{kube,client,other}` with a failure the first time each (a conflict
/// from kube's Api, a conflict from ctrl's client, a plain error), then success; counts calls.
fn reconciler(
    api: Api<ConfigMap>,
    client: Client,
    calls: Arc<Mutex<BTreeMap<String, usize>>>,
) -> impl reconcile::Reconciler {
    reconcile::func(move |_ctx, req: Request| {
        let (api, client, calls) = (api.clone(), client.clone(), calls.clone());
        async move {
            let n = {
                let mut calls = calls.lock();
                let n = calls.entry(req.name.clone()).or_default();
                *n += 1;
                *n
            };
            if req.namespace != "default" || n > 1 {
                return Ok(Action::done());
            }
            match req.name.as_str() {
                "kube" => {
                    api.replace("kube", &PostParams::default(), &stale("kube"))
                        .await?;
                }
                "client" => {
                    client.update(&stale("client")).await?;
                }
                _ => return Err(reconcile::Error::new("boom")),
            }
            Ok(Action::done())
        }
    })
}

#[tokio::test]
async fn a_conflict_is_requeued_and_logged_as_one_short_info_line() {
    let log = capture();
    let env = Environment::start().await.expect("envtest");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cache = Cache::new(env.client(), CacheOptions::default());
    let ctx = CancellationToken::new();
    tokio::spawn({
        let (c, x) = (cache.clone(), ctx.clone());
        async move { c.start(x).await }
    });
    let calls: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let client = Client::new(env.client(), cache.clone());
    let opts = Options {
        skip_name_validation: Some(true),
        kind: "ConfigMap".into(),
        ..Default::default()
    };
    let controller = Controller::new(
        "conflicts",
        reconciler(api.clone(), client, calls.clone()),
        opts,
    )
    .expect("controller");
    controller
        .watch(Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject))
        .await
        .expect("watch");
    tokio::spawn({
        let x = ctx.clone();
        async move { controller.start(x).await }
    });
    for name in ["kube", "client", "other"] {
        let mut cm = stale(name);
        cm.metadata.resource_version = None;
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    let twice = |name: &str| calls.lock().get(name).copied().unwrap_or(0) >= 2;
    for _ in 0..1000 {
        if ["kube", "client", "other"].iter().all(|n| twice(n)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ctx.cancel();
    assert!(
        ["kube", "client", "other"].iter().all(|n| twice(n)),
        "each failure requeued: {:?}",
        calls.lock()
    );

    let lines = log.lines.lock().clone();
    let msg = |l: &Line| l.1.get("message").cloned().unwrap_or_default();
    let conflicts: Vec<&Line> = lines
        .iter()
        .filter(|l| msg(l) == "Reconcile conflict, requeued")
        .collect();
    let writes: Vec<&str> = conflicts.iter().map(|l| l.1["write"].as_str()).collect();
    assert_eq!(conflicts.len(), 2, "{lines:?}");
    assert!(
        conflicts.iter().all(|l| l.0 == Level::INFO),
        "{conflicts:?}"
    );
    assert!(
        writes.contains(&"configmaps kube"),
        "kube's Status names the object: {writes:?}"
    );
    assert!(
        writes.contains(&"update v1/ConfigMap default/client"),
        "the client's write: {writes:?}"
    );
    assert!(
        writes.iter().all(|w| w.len() < 80 && !w.contains("Status")),
        "{writes:?}"
    );
    // Every other error is still an ERROR with its cause.
    let errors: Vec<&Line> = lines
        .iter()
        .filter(|l| msg(l) == "Reconciler error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        (errors[0].0, errors[0].1["error"].as_str()),
        (Level::ERROR, "boom")
    );
}
