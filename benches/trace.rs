//! Draws a real trace for docs/manager.md ("Tracing"): a ConfigMap `app` (standing in for
//! a custom resource) created inside a client span, with that span's context injected as
//! KEP-5915's `tracing.k8s.io/traceparent`; a controller reconciles it, creating a
//! Deployment stamped with the reconcile's context (`otel::inject`); the Deployment's create
//! queues the owner again (`Owns`), and that reconcile links back. Spans come from the
//! in-memory exporter, run against ctrl-envtest, and are drawn with `support/plot.rs` as
//! `trace_chain.svg` (rows are spans; lines are span links).
//!
//! `cargo bench --bench trace --features otel` (or `cargo test --bench trace --features
//! otel`, the same in a debug build).

#[path = "support/plot.rs"]
#[allow(dead_code)]
mod plot;

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use ctrl::cache::{Cache, Options as CacheOptions};
use ctrl::controller::{Controller, Options};
use ctrl::handler::{EnqueueRequestForObject, EnqueueRequestForOwner};
use ctrl::otel;
use ctrl::otel::opentelemetry::trace::SpanKind;
use ctrl::otel::opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use ctrl::reconcile::{self, Action, Reconciler, Request};
use ctrl::source::Kind;
use ctrl_envtest::Environment;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, PostParams};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Reconciles `app`: makes its Deployment once, stamped with the reconcile's context.
struct App {
    client: kube::Client,
    done: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl Reconciler for App {
    async fn reconcile(
        &self,
        _: CancellationToken,
        req: Request,
    ) -> Result<Action, reconcile::Error> {
        let deploys: Api<Deployment> = Api::namespaced(self.client.clone(), &req.namespace);
        if deploys
            .get_opt(&req.name)
            .await
            .map_err(reconcile::Error::new)?
            .is_some()
        {
            let _ = self.done.send(());
            return Ok(Action::done());
        }
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &req.namespace);
        let app = cms.get(&req.name).await.map_err(reconcile::Error::new)?;
        let mut d: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": req.name},
            "spec": {
                "selector": {"matchLabels": {"app": req.name}},
                "template": {
                    "metadata": {"labels": {"app": req.name}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]}
                }
            }
        }))
        .map_err(reconcile::Error::new)?;
        d.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: req.name.clone(),
            uid: app.metadata.uid.unwrap_or_default(),
            controller: Some(true),
            ..Default::default()
        }]);
        otel::inject(&mut d.metadata);
        deploys
            .create(&PostParams::default(), &d)
            .await
            .map_err(reconcile::Error::new)?;
        Ok(Action::done())
    }
}

fn client(env: &Environment) -> kube::Client {
    let mut cfg = env.config();
    let v = http::HeaderValue::from_str(&format!("Bearer {}", env.admin_token())).expect("token");
    cfg.headers.push((http::header::AUTHORIZATION, v));
    kube::Client::try_from(cfg).expect("client")
}

/// Runs the chain and returns every span exported.
async fn chain(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    let env = Environment::start().await.expect("envtest");
    let client = client(&env);
    let cache = Cache::new(client.clone(), CacheOptions::default());
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    let (done, mut finished) = mpsc::unbounded_channel();
    let r = App {
        client: client.clone(),
        done,
    };
    let c = Controller::new("app", r, Options::default()).expect("controller");
    c.watch(Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject))
        .await
        .expect("for");
    let owns = EnqueueRequestForOwner::new::<ConfigMap>();
    c.watch(Kind::<Deployment>::new(&cache, owns))
        .await
        .expect("owns");
    let (c2, x) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c2.start(x).await });

    let create = tracing::info_span!("kubectl create configmap app");
    async {
        let mut app = ConfigMap::default();
        app.metadata.name = Some("app".into());
        otel::inject(&mut app.metadata);
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        cms.create(&PostParams::default(), &app)
            .await
            .expect("create app");
    }
    .instrument(create)
    .await;
    finished.recv().await.expect("the second reconcile");
    ctx.cancel();
    tokio::time::sleep(Duration::from_millis(50)).await;
    otel::flush();
    exporter.get_finished_spans().expect("spans")
}

/// The spans of the picture: the create, the reconciles of `app` and their client calls.
fn rows(spans: &[SpanData]) -> (Vec<plot::SpanBar>, Vec<(usize, usize)>) {
    let mut keep: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "reconcile" || s.name.starts_with("kubectl"))
        .collect();
    let parents: Vec<_> = keep.iter().map(|s| s.span_context.span_id()).collect();
    keep.extend(
        spans
            .iter()
            .filter(|s| s.span_kind == SpanKind::Client && parents.contains(&s.parent_span_id)),
    );
    keep.sort_by_key(|s| s.start_time);
    let t0 = keep
        .first()
        .map_or(SystemTime::UNIX_EPOCH, |s| s.start_time);
    let ms = |t: SystemTime| t.duration_since(t0).unwrap_or_default().as_secs_f64() * 1e3;
    let traces: Vec<_> = keep.iter().map(|s| s.span_context.trace_id()).collect();
    let bars = keep
        .iter()
        .map(|s| plot::SpanBar {
            label: format!(
                "{}{} (trace {}…)",
                if s.span_kind == SpanKind::Client {
                    "  └ "
                } else {
                    ""
                },
                s.name,
                &s.span_context.trace_id().to_string()[..8]
            ),
            start: ms(s.start_time),
            end: ms(s.end_time),
            trace: traces
                .iter()
                .position(|t| *t == s.span_context.trace_id())
                .unwrap_or(0),
        })
        .collect();
    let mut links = Vec::new();
    for (to, s) in keep.iter().enumerate() {
        for l in &s.links.links {
            if let Some(from) = keep
                .iter()
                .position(|k| k.span_context.span_id() == l.span_context.span_id())
            {
                links.push((from, to));
            }
        }
    }
    (bars, links)
}

fn main() {
    let exporter = InMemorySpanExporter::default();
    let subscriber =
        tracing_subscriber::registry().with(otel::layer_with_exporter(exporter.clone()));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let spans = rt.block_on(chain(&exporter));
    let (bars, links) = rows(&spans);
    for (i, b) in bars.iter().enumerate() {
        println!(
            "{i:>2} {:>8.2} ms .. {:>8.2} ms  {}",
            b.start, b.end, b.label
        );
    }
    println!("links (from -> to): {links:?}");
    plot::timeline(
        "trace_chain.svg",
        "ConfigMap app -> reconcile -> Deployment -> reconcile (links: lines)",
        &bars,
        &links,
    );
}
