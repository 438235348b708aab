//! Why a reconcile ran (issue 34), against ctrl-envtest: the controller's queue keeps,
//! for each queued key, what queued it, and `reconcile::triggers()` hands the set to the
//! reconcile.
//!
//! The coalescing test holds the only worker inside the owner's first reconcile (which
//! ran for the initial list's create of its ConfigMap, marked as such) while an update of
//! that ConfigMap (through an `Owns`-style source) and a channel event arrive; the
//! reconcile then asks for `requeue_after(1h)`. The priority queue merges all three into
//! one next reconcile (an add while processing makes the key ready at `done`, and the
//! earliest ready time wins over the hour), and that reconcile reports all three, each
//! with the resourceVersion the event carried. The handlers signal when they ran, so
//! nothing waits on time. The cap test adds one key 10,000 times to a real queue; the last
//! tests show where a delayed add's trigger goes on each queue, and that its delay is not
//! counted as queue wait.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options as CacheOptions};
use ctrl_runtime::controller::{Controller, Options};
use ctrl_runtime::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use ctrl_runtime::handler::{EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler};
use ctrl_runtime::metrics::registry;
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use ctrl_runtime::source::{Channel, Kind};
use ctrl_runtime::workqueue::triggers::{
    Event, Kind as ObjectKind, MAX_TRIGGERS, ObjectRef, Origin,
};
use ctrl_runtime::workqueue::{
    AddOpts, PriorityQueue, Queue, QueueConfig, RateLimitingQueue, Trigger, Triggered, Triggers,
    prometheus_metrics_provider,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Calls the wrapped handler, then says which event it handled (the test's signal that
/// the add happened). Keeps the wrapped handler's trigger origin.
struct Signal<H> {
    inner: H,
    tx: mpsc::UnboundedSender<&'static str>,
}

impl<K: 'static, H: EventHandler<K>> EventHandler<K> for Signal<H> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<Request>) {
        self.inner.create(e, q);
        let _ = self.tx.send("create");
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<Request>) {
        self.inner.update(e, q);
        let _ = self.tx.send("update");
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<Request>) {
        self.inner.delete(e, q);
        let _ = self.tx.send("delete");
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<Request>) {
        self.inner.generic(e, q);
        let _ = self.tx.send("generic");
    }
    fn trigger_origin(&self) -> Origin {
        self.inner.trigger_origin()
    }
}

/// Reports each reconcile's triggers; the first one waits for `gate` and asks for
/// `requeue_after(1h)`, the others are done.
struct Reporting {
    seen: mpsc::UnboundedSender<Arc<Triggers>>,
    gate: Arc<Semaphore>,
    first: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Reconciler for Reporting {
    async fn reconcile(
        &self,
        _: CancellationToken,
        _: Request,
    ) -> Result<Action, reconcile::Error> {
        let _ = self.seen.send(reconcile::triggers());
        if self.first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let _permit = self.gate.acquire().await;
            return Ok(Action::requeue_after(Duration::from_secs(3600)));
        }
        Ok(Action::done())
    }
}

fn meta(ns: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(ns.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

/// A namespace, a Secret `parent` and a ConfigMap `child` it controls.
async fn objects(env: &Environment, ns: &str) -> (Secret, ConfigMap) {
    let nss: Api<Namespace> = Api::all(env.client());
    let ns_obj = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    nss.create(&PostParams::default(), &ns_obj)
        .await
        .expect("namespace");
    let secrets: Api<Secret> = Api::namespaced(env.client(), ns);
    let parent = secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: meta(ns, "parent"),
                ..Default::default()
            },
        )
        .await
        .expect("parent");
    let mut child = ConfigMap {
        metadata: meta(ns, "child"),
        ..Default::default()
    };
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Secret".into(),
        name: "parent".into(),
        uid: parent.metadata.uid.clone().expect("uid"),
        controller: Some(true),
        ..Default::default()
    }]);
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), ns);
    let child = cms
        .create(&PostParams::default(), &child)
        .await
        .expect("child");
    (parent, child)
}

/// Waits for the handlers' signal `what` (other objects' events signal too).
async fn until(sig: &mut mpsc::UnboundedReceiver<&'static str>, what: &str) {
    while sig.recv().await.expect("handlers are running") != what {}
}

fn rv<K: kube::Resource>(obj: &K) -> String {
    obj.meta()
        .resource_version
        .clone()
        .expect("resourceVersion")
}

/// The trigger of `origin`/`event` in `set`, if any.
fn find(set: &Triggers, origin: Origin, event: Event) -> Option<&Trigger> {
    set.iter().find(|t| t.origin == origin && t.event == event)
}

fn object(t: &Trigger) -> &ObjectRef {
    t.object.as_ref().expect("the trigger names its object")
}

/// `controller_runtime_reconcile_triggers_total{controller, source, event}`.
fn triggers_total(controller: &str, source: &str, event: &str) -> f64 {
    let families = registry().gather();
    let Some(mf) = families
        .iter()
        .find(|mf| mf.name() == "controller_runtime_reconcile_triggers_total")
    else {
        return 0.0;
    };
    mf.get_metric()
        .iter()
        .find(|m| {
            let want = [
                ("controller", controller),
                ("source", source),
                ("event", event),
            ];
            want.iter().all(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == *k && l.value() == *v)
            })
        })
        .map_or(0.0, |m| m.get_counter().get_value())
}

#[tokio::test]
async fn an_owned_update_a_timer_requeue_and_a_channel_event_coalesce_into_one_reconcile() {
    let env = Environment::start().await.expect("envtest");
    let ns = "triggers";
    let (parent, child) = objects(&env, ns).await;
    let cache = Cache::new(env.client(), CacheOptions::default());
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });

    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let r = Reporting {
        seen: seen_tx,
        gate: gate.clone(),
        first: true.into(),
    };
    let opts = Options {
        skip_name_validation: Some(true),
        cache_sync_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let c = Controller::new("triggers-coalesce", r, opts).expect("controller");
    let (sig_tx, mut sig) = mpsc::unbounded_channel();
    let owns = Signal {
        inner: EnqueueRequestForOwner::new::<Secret>(),
        tx: sig_tx.clone(),
    };
    c.watch(Kind::<ConfigMap>::new(&cache, owns))
        .await
        .expect("watch owns");
    let (events, rx) = mpsc::channel::<GenericEvent<Secret>>(8);
    let chan = Signal {
        inner: EnqueueRequestForObject,
        tx: sig_tx,
    };
    c.watch(Channel::new(rx, chan))
        .await
        .expect("watch channel");
    let (c2, x) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c2.start(x).await });

    // The first reconcile: the initial list's create of the child, marked as such.
    let first = seen.recv().await.expect("first reconcile");
    assert_eq!(first.len(), 1, "{first}");
    let t = find(&first, Origin::Owns, Event::Create).expect("owns:create");
    assert!(t.initial_list, "{first}");
    assert_eq!(object(t).name(), Some("child"));
    assert_eq!(object(t).namespace(), Some(ns));
    assert_eq!(object(t).kind(), "ConfigMap");
    assert_eq!(object(t).resource_version(), rv(&child));

    // While it runs: the child changes, and the channel names the parent.
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), ns);
    let mut changed = child.clone();
    changed.data = Some([("k".to_string(), "v".to_string())].into());
    let changed = cms
        .replace("child", &PostParams::default(), &changed)
        .await
        .expect("update child");
    until(&mut sig, "update").await;
    events
        .send(GenericEvent::new(Arc::new(parent.clone())))
        .await
        .expect("channel");
    until(&mut sig, "generic").await;
    gate.add_permits(1);

    // One reconcile reports all three.
    let second = seen.recv().await.expect("second reconcile");
    assert_eq!(second.len(), 3, "{second}");
    let upd = find(&second, Origin::Owns, Event::Update).expect("owns:update");
    assert_eq!(object(upd).resource_version(), rv(&changed), "{second}");
    assert!(!upd.initial_list);
    let gen_ = find(&second, Origin::Channel, Event::Generic).expect("channel:generic");
    assert_eq!(object(gen_).kind(), "Secret");
    assert_eq!(object(gen_).name(), Some("parent"));
    assert_eq!(object(gen_).resource_version(), rv(&parent), "{second}");
    let requeue = find(&second, Origin::Requeue, Event::RequeueAfter).expect("requeue_after");
    assert!(requeue.object.is_none());
    assert_eq!(second.dropped(), 0);
    assert_eq!(triggers_total("triggers-coalesce", "owns", "update"), 1.0);
    assert_eq!(
        triggers_total("triggers-coalesce", "channel", "generic"),
        1.0
    );
    assert_eq!(
        triggers_total("triggers-coalesce", "requeue", "requeue_after"),
        1.0
    );
    assert_eq!(triggers_total("triggers-coalesce", "owns", "create"), 1.0);
    ctx.cancel();
}

fn cm_ref(name: String) -> ObjectRef {
    ObjectRef::named(ObjectKind::intern("ConfigMap"), "ns", &name, "1")
}

#[tokio::test]
async fn the_trigger_set_stays_capped_under_ten_thousand_adds_of_one_key() {
    let q: Arc<dyn Queue<String>> = Arc::new(PriorityQueue::new(QueueConfig::new("")));
    let q = Triggered::new(q);
    for i in 0..10_000 {
        let t = Trigger::new(Origin::Watches, Event::Update).with_object(cm_ref(i.to_string()));
        q.add_triggered(AddOpts::default(), "key".to_string(), t);
        let same = Trigger::new(Origin::For, Event::Update).with_object(cm_ref("one".into()));
        q.add_triggered(AddOpts::default(), "key".to_string(), same);
    }
    let (key, _) = q.get_boxed().await.expect("the key");
    let set = q.take_triggers(&key).expect("the queue keeps triggers");
    assert_eq!(set.len(), MAX_TRIGGERS);
    // The merged one holds every add of its cause; the distinct ones beyond the cap are
    // counted, not kept.
    let merged = find(&set, Origin::For, Event::Update).expect("the repeated cause");
    assert_eq!(merged.count, 10_000);
    assert_eq!(set.dropped(), 10_000 - (MAX_TRIGGERS as u64 - 1));
    // Taken means gone: the next round starts empty.
    assert_eq!(q.take_triggers(&key), None);
    assert!(q.is_empty());
}

/// A key added now and with a one-hour delay, taken once.
async fn now_and_in_an_hour(q: Arc<dyn Queue<String>>) -> Triggers {
    let q = Triggered::new(q);
    let later = AddOpts {
        after: Some(Duration::from_secs(3600)),
        ..AddOpts::default()
    };
    q.add_triggered(later, "k".into(), Trigger::requeue(Event::RequeueAfter));
    let now = Trigger::new(Origin::For, Event::Update).with_object(cm_ref("now".into()));
    q.add_triggered(AddOpts::default(), "k".into(), now);
    let (key, _) = q.get_boxed().await.expect("the key, ready now");
    q.take_triggers(&key).expect("the queue keeps triggers")
}

#[tokio::test]
async fn a_pending_deadline_joins_the_hand_out_that_merges_it() {
    // The priority queue keeps one ready time per key: handing it out now merges the
    // hour-later deadline into this reconcile, so its trigger comes along.
    let pq: Arc<dyn Queue<String>> = Arc::new(PriorityQueue::new(QueueConfig::new("")));
    let got = now_and_in_an_hour(pq).await;
    assert!(
        find(&got, Origin::Requeue, Event::RequeueAfter).is_some(),
        "{got}"
    );
    assert!(find(&got, Origin::For, Event::Update).is_some(), "{got}");
    // The plain (client-go) queue still fires the deadline on its own: its trigger waits.
    let rlq: Arc<dyn Queue<String>> = Arc::new(RateLimitingQueue::new(QueueConfig::new("")));
    let got = now_and_in_an_hour(rlq).await;
    assert_eq!(got.len(), 1, "{got}");
    assert!(find(&got, Origin::For, Event::Update).is_some(), "{got}");
}

/// The queue wait of a key added with `delay` and taken as soon as it is ready.
async fn wait_after_delay(q: Arc<dyn Queue<String>>, delay: Duration) -> Duration {
    let q = Triggered::wrap(q);
    let opts = AddOpts {
        after: Some(delay),
        ..AddOpts::default()
    };
    q.add_triggered(opts, "k".into(), Trigger::requeue(Event::RequeueAfter));
    let (_, _, set) = q.get_triggered_boxed().await.expect("the key, once due");
    let set = set.expect("the queue keeps triggers");
    assert!(
        find(&set, Origin::Requeue, Event::RequeueAfter).is_some(),
        "{set}"
    );
    set.waited().expect("the wait is measured")
}

#[tokio::test]
async fn a_requeue_after_delay_is_not_counted_as_queue_wait() {
    // As client-go's workqueue_queue_duration_seconds: the wait starts when the delay
    // ends, not at the add (the key was taken the moment it became ready, so its wait is
    // far below the delay it sat out).
    let delay = Duration::from_millis(500);
    // The priority queue reads the wait from its metrics' stamps (a controller's queue has
    // metrics); without them it reads no clock and leaves the wait unmeasured.
    let cfg = QueueConfig::new("wait-after-delay").with_metrics(prometheus_metrics_provider());
    let pq: Arc<dyn Queue<String>> = Arc::new(PriorityQueue::new(cfg));
    let waited = wait_after_delay(pq, delay).await;
    assert!(waited < delay, "priority queue: waited {waited:?}");
    let rlq: Arc<dyn Queue<String>> = Arc::new(RateLimitingQueue::new(QueueConfig::new("")));
    let waited = wait_after_delay(rlq, delay).await;
    assert!(waited < delay, "plain queue: waited {waited:?}");
}
