//! OpenTelemetry across objects (issue 34, the `otel` feature), against ctrl-envtest with an
//! in-memory exporter: a ConfigMap `parent` created with a KEP-5915 `traceparent`; its
//! reconcile span is a new root linked to that trace; the child the reconcile creates
//! carries (through `otel::inject`) a `traceparent` whose span is that reconcile span; the
//! reconcile the child's create then triggers (through the owner handler) links back to it;
//! the kube client's request spans made inside the reconcile are its children, and the
//! client (with `otel::TraceparentLayer`) sends the reconcile's context to the API server,
//! whose request log records it. Then the two other places a trace continues: a webhook
//! call carrying the API server's `traceparent` is handled in a child span of it, and a
//! leader election's transitions are the events of its `leader_election` span.
//!
//! Run with `cargo test -p ctrl-runtime --features otel --test otel_trace`.
#![cfg(feature = "otel")]

mod webhook_support;

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options as CacheOptions};
use ctrl_runtime::controller::{Controller, Options};
use ctrl_runtime::handler::{EnqueueRequestForObject, EnqueueRequestForOwner};
use ctrl_runtime::manager::{Manager, Options as ManagerOptions};
use ctrl_runtime::otel;
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use ctrl_runtime::source::Kind;
use ctrl_runtime::webhook::admission::{
    Request as AdmissionRequest, Response, Webhook, handler_fn,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta, PostParams};
use opentelemetry::trace::{SpanContext, SpanKind};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::SubscriberExt;

const ORIGIN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Reconciles `parent`: creates its child (once), stamped with the reconcile's trace
/// context, and reports the context of every reconcile.
struct Chain {
    client: kube::Client,
    seen: mpsc::UnboundedSender<String>,
}

#[async_trait]
impl Reconciler for Chain {
    async fn reconcile(
        &self,
        _: CancellationToken,
        req: Request,
    ) -> Result<Action, reconcile::Error> {
        if req.name != "parent" {
            return Ok(Action::done());
        }
        let here = otel::traceparent_of(&tracing::Span::current()).unwrap_or_default();
        let _ = self.seen.send(here);
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &req.namespace);
        if cms
            .get_opt("child")
            .await
            .map_err(reconcile::Error::new)?
            .is_some()
        {
            return Ok(Action::done());
        }
        let parent = cms.get("parent").await.map_err(reconcile::Error::new)?;
        let mut child = ConfigMap {
            metadata: ObjectMeta {
                name: Some("child".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: "parent".into(),
                    uid: parent.metadata.uid.unwrap_or_default(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(
            otel::inject(&mut child.metadata),
            "a reconcile has a trace context"
        );
        cms.create(&PostParams::default(), &child)
            .await
            .map_err(reconcile::Error::new)?;
        Ok(Action::done())
    }
}

/// A kube client with kube's own layers (its `HTTP` request spans included) that sends the
/// current span's `traceparent` with each request.
fn traced_client(env: &Environment) -> kube::Client {
    let mut cfg = env.config();
    let token = format!("Bearer {}", env.admin_token());
    let v = http::HeaderValue::from_str(&token).expect("token header");
    cfg.headers.push((http::header::AUTHORIZATION, v));
    kube::client::ClientBuilder::try_from(cfg)
        .expect("client")
        .with_layer(&otel::TraceparentLayer)
        .build()
}

fn context(tp: &str) -> SpanContext {
    otel::parse_traceparent(tp).expect("a traceparent")
}

/// The in-memory exporter every test of this process exports to (one global subscriber).
fn exporter() -> InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER
        .get_or_init(|| {
            let exporter = InMemorySpanExporter::default();
            let subscriber =
                tracing_subscriber::registry().with(otel::layer_with_exporter(exporter.clone()));
            tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
            exporter
        })
        .clone()
}

/// The first exported span `matches` accepts, once it has ended.
async fn exported_where(
    exporter: &InMemorySpanExporter,
    what: &str,
    matches: impl Fn(&SpanData) -> bool,
) -> SpanData {
    for _ in 0..500 {
        otel::flush();
        let spans = exporter.get_finished_spans().expect("spans");
        if let Some(s) = spans.into_iter().find(&matches) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} was never exported");
}

/// The exported span with `sc`'s span id, once it has ended.
async fn exported(exporter: &InMemorySpanExporter, sc: &SpanContext) -> SpanData {
    let what = format!("span {sc:?}");
    exported_where(exporter, &what, |s| {
        s.span_context.span_id() == sc.span_id()
    })
    .await
}

/// The string value of attribute `key` of `span`.
fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn links_to(span: &SpanData, sc: &SpanContext) -> bool {
    span.links.links.iter().any(|l| {
        l.span_context.trace_id() == sc.trace_id() && l.span_context.span_id() == sc.span_id()
    })
}

#[tokio::test]
async fn a_reconcile_links_to_its_triggers_and_stamps_what_it_creates() {
    let exporter = exporter();
    let env = Environment::start().await.expect("envtest");
    let client = traced_client(&env);
    let cache = Cache::new(client.clone(), CacheOptions::default());
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    let (seen, mut reconciles) = mpsc::unbounded_channel();
    let opts = Options {
        skip_name_validation: Some(true),
        cache_sync_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let r = Chain {
        client: client.clone(),
        seen,
    };
    let c = Controller::new("otel-chain", r, opts).expect("controller");
    c.watch(Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject))
        .await
        .expect("watch for");
    c.watch(Kind::<ConfigMap>::new(
        &cache,
        EnqueueRequestForOwner::new::<ConfigMap>(),
    ))
    .await
    .expect("watch owns");
    let (c2, x) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c2.start(x).await });

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut parent = ConfigMap::default();
    parent.metadata.name = Some("parent".into());
    parent.metadata.annotations =
        Some([(otel::TRACEPARENT_ANNOTATION.to_string(), ORIGIN.to_string())].into());
    cms.create(&PostParams::default(), &parent)
        .await
        .expect("create parent");

    // The first reconcile: a new root, linked to the trace the parent carries.
    let first = context(&reconciles.recv().await.expect("first reconcile"));
    let span1 = exported(&exporter, &first).await;
    assert_eq!(span1.name, "reconcile");
    assert!(links_to(&span1, &context(ORIGIN)), "{:?}", span1.links);
    assert_ne!(span1.span_context.trace_id(), context(ORIGIN).trace_id());

    // The child carries the first reconcile's context.
    let child = cms.get("child").await.expect("child");
    let stamped = child
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(otel::TRACEPARENT_ANNOTATION))
        .expect("the child is stamped");
    assert_eq!(context(stamped).span_id(), first.span_id());

    // The reconcile the child's create triggered links back to the first.
    let second = context(&reconciles.recv().await.expect("second reconcile"));
    let span2 = exported(&exporter, &second).await;
    assert!(links_to(&span2, &first), "{:?}", span2.links);

    // The client's requests inside the first reconcile are its children.
    let spans = exporter.get_finished_spans().expect("spans");
    let requests: Vec<_> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Client && s.parent_span_id == first.span_id())
        .collect();
    assert!(requests.len() >= 2, "get, get, create: {requests:?}");
    assert!(
        requests
            .iter()
            .all(|s| s.span_context.trace_id() == first.trace_id())
    );
    ctx.cancel();
}

/// What the API server sends a webhook: the `traceparent` of its own request span.
const API_SERVER: &str = "00-5af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01";

#[tokio::test]
async fn a_webhook_call_continues_the_api_servers_trace() {
    let exporter = exporter();
    let allow = || Webhook::new(handler_fn(|_: &AdmissionRequest| Response::allowed("")));
    let r = webhook_support::start(|s| {
        s.register("/otel-traced", allow()).expect("register");
        s.register("/otel-untraced", allow()).expect("register");
    })
    .await;
    let body = webhook_support::review(
        "CREATE",
        webhook_support::configmap(serde_json::json!({})),
        None,
    )
    .to_string();
    let headers = [("traceparent", API_SERVER)];
    let (code, text) = webhook_support::post_with(
        &r,
        "/otel-traced",
        "application/json",
        &headers,
        body.as_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let (code, text) =
        webhook_support::post(&r, "/otel-untraced", "application/json", body.as_bytes()).await;
    assert_eq!(code, 200, "{text}");

    // With the header: the webhook span is the API server's span's child, in its trace.
    let remote = context(API_SERVER);
    let path = |s: &SpanData, p: &str| {
        s.name == "webhook" && attribute(s, "webhook").as_deref() == Some(p)
    };
    let traced = exported_where(&exporter, "the traced webhook span", |s| {
        path(s, "/otel-traced")
    })
    .await;
    assert_eq!(traced.parent_span_id, remote.span_id());
    assert_eq!(traced.span_context.trace_id(), remote.trace_id());
    // Without it: a root of a trace of its own.
    let untraced = exported_where(&exporter, "the untraced webhook span", |s| {
        path(s, "/otel-untraced")
    })
    .await;
    assert_eq!(
        untraced.parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
    assert_ne!(untraced.span_context.trace_id(), remote.trace_id());
}

#[tokio::test]
async fn leader_election_transitions_are_events_of_its_span() {
    let exporter = exporter();
    let env = Environment::start().await.expect("envtest");
    let opts = ManagerOptions {
        metrics_bind_address: "0".into(),
        leader_election: true,
        leader_election_id: "otel-lease".into(),
        leader_election_namespace: Some("default".into()),
        leader_election_release_on_cancel: true,
        ..Default::default()
    };
    let mgr = Manager::new(env.client(), opts).expect("manager");
    let elected = mgr.elected();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let stop = stop.clone();
        async move { mgr.start(stop).await }
    });
    tokio::time::timeout(Duration::from_secs(30), elected)
        .await
        .expect("elected");
    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stops cleanly");

    let span = exported_where(&exporter, "the leader_election span", |s| {
        s.name == "leader_election" && attribute(s, "lease").as_deref() == Some("otel-lease")
    })
    .await;
    let events: Vec<&str> = span.events.events.iter().map(|e| e.name.as_ref()).collect();
    for transition in [
        "attempting to acquire leader lease",
        "successfully acquired lease",
        "released leader lease",
    ] {
        assert!(events.contains(&transition), "{transition}: {events:?}");
    }
}
