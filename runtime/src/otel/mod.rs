//! OpenTelemetry traces (the `otel` cargo feature; off by default, and then no
//! opentelemetry crate is compiled): export set up from the `OTEL_*` environment, W3C trace
//! contexts read from and written to objects (KEP-5915's `tracing.k8s.io/traceparent`), and
//! links from a reconcile's span to the trace contexts of the objects that triggered it.
//!
//! `tracing` spans become OpenTelemetry spans through `tracing-opentelemetry`'s layer: the
//! `log` module above adds it when the environment asks for export ([`layer_from_env`]), a
//! test adds [`layer_with_exporter`] with an in-memory exporter. Everything else here works
//! on `tracing` spans, so the controller above calls [`link`] and a reconciler calls
//! [`inject`] without touching an OpenTelemetry type. Like `log`, this module sits low and
//! knows nothing of controllers or objects beyond their metadata.

pub mod file;
mod propagate;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanExporter};
use tracing::Subscriber;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::registry::LookupSpan;

pub use file::FileExporter;
pub use propagate::{Traceparent, TraceparentLayer};

/// The OpenTelemetry API and SDK crates this module is built on, for exporters, span data
/// and the in-memory exporter of tests (`opentelemetry_sdk::trace::InMemorySpanExporter`).
pub use {opentelemetry, opentelemetry_sdk};

/// The annotation ctrl writes a trace context to (KEP-5915).
pub const TRACEPARENT_ANNOTATION: &str = "tracing.k8s.io/traceparent";

/// The tracer name of ctrl's spans (the instrumentation scope).
const SCOPE: &str = "ctrl";

/// The provider [`layer_from_env`] or [`layer_with_exporter`] built, kept for [`flush`].
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// A layer exporting every span through `exporter` as soon as it ends (a simple span
/// processor: what an in-memory exporter in a test wants).
pub fn layer_with_exporter<S, E>(exporter: E) -> OpenTelemetryLayer<S, SdkTracer>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    E: SpanExporter + 'static,
{
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter)
        .build();
    layer_of(provider)
}

/// The layer the `OTEL_*` environment asks for, or `None` (the OpenTelemetry SDK
/// environment spec): `OTEL_TRACES_EXPORTER=console` prints every span to stdout as it ends;
/// `otlp_file` (or `otlp_file/development`) appends every span as it ends to the file
/// `OTEL_EXPORTER_OTLP_FILE_PATH` (default [`file::DEFAULT_PATH`]) as an OTLP/JSON line
/// ([`FileExporter`]: a trace to read or check without a collector); unset or `otlp`, with
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set, exports OTLP
/// over HTTP/protobuf in batches (the exporter reads the endpoint, headers, timeout and
/// `OTEL_SERVICE_NAME` itself); `none`, or no endpoint, exports nothing. Only the spans
/// [`EXPORT_FILTER`] lets through are exported.
pub fn layer_from_env<S>() -> Option<Filtered<OpenTelemetryLayer<S, SdkTracer>, EnvFilter, S>>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let provider = match var("OTEL_TRACES_EXPORTER").as_deref() {
        Some("console") => SdkTracerProvider::builder()
            .with_simple_exporter(opentelemetry_stdout::SpanExporter::default()),
        Some("otlp_file" | "otlp_file/development") => {
            let path = var("OTEL_EXPORTER_OTLP_FILE_PATH");
            let path = path.as_deref().unwrap_or(file::DEFAULT_PATH);
            match FileExporter::create(path) {
                Ok(e) => SdkTracerProvider::builder().with_simple_exporter(e),
                Err(error) => {
                    tracing::error!(%error, path, "trace file not opened");
                    return None;
                }
            }
        }
        None | Some("otlp") => {
            var("OTEL_EXPORTER_OTLP_ENDPOINT").or(var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))?;
            let built = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build();
            match built {
                Ok(e) => SdkTracerProvider::builder().with_batch_exporter(e),
                Err(error) => {
                    tracing::error!(%error, "OTLP trace export not set up");
                    return None;
                }
            }
        }
        Some(_) => return None,
    };
    Some(layer_of(provider.build()).with_filter(EnvFilter::new(EXPORT_FILTER)))
}

/// What [`layer_from_env`] exports: spans at `info` and above (ctrl's `reconcile`, `webhook`
/// and `leader_election`, and the events inside them) and the kube client's `HTTP` request
/// spans (`debug`), not the `trace`-level spans of the HTTP and HTTP/2 stacks below them.
pub const EXPORT_FILTER: &str = "info,kube_client=debug";

/// The layer over `provider`, which becomes the global one and is kept for [`flush`].
fn layer_of<S>(provider: SdkTracerProvider) -> OpenTelemetryLayer<S, SdkTracer>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let tracer = provider.tracer(SCOPE);
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    opentelemetry::global::set_tracer_provider(provider.clone());
    let _ = PROVIDER.set(provider);
    tracing_opentelemetry::layer().with_tracer(tracer)
}

/// Exports every span that has ended and not been exported yet (call before exit, or in a
/// test before reading its exporter).
pub fn flush() {
    if let Some(p) = PROVIDER.get()
        && let Err(error) = p.force_flush()
    {
        tracing::warn!(%error, "flushing spans failed");
    }
}

/// The span context a W3C `traceparent` names, if it parses (the SDK's propagator reads
/// it, as from an HTTP header).
pub fn parse_traceparent(traceparent: &str) -> Option<SpanContext> {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// The W3C `traceparent` of `span` (its OpenTelemetry context), if it has one.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// Links `span` to each trace context in `traceparents` (KEP-5915: a reconcile is a new
/// root, linked to the traces of the objects that caused it). Unparsable ones are skipped.
pub fn link<'a>(span: &tracing::Span, traceparents: impl IntoIterator<Item = &'a str>) {
    for tp in traceparents {
        if let Some(sc) = parse_traceparent(tp) {
            span.add_link(sc);
        }
    }
}

/// Continues the trace of an incoming request's `traceparent` header in `span` (a webhook
/// call from the API server): `span` becomes the remote span's child.
pub fn continue_from(span: &tracing::Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(cx);
}

/// Writes the current span's trace context into `meta` as the
/// [`TRACEPARENT_ANNOTATION`], so the controller that reconciles the object next links its
/// reconcile to this one (opt-in: call it on an object you are about to create or patch,
/// inside a reconcile). Returns whether there was a context to write.
pub fn inject(meta: &mut ObjectMeta) -> bool {
    let Some(tp) = traceparent_of(&tracing::Span::current()) else {
        return false;
    };
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(TRACEPARENT_ANNOTATION.to_string(), tp);
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn traceparents_parse_and_bad_ones_do_not() {
        let sc =
            super::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                .expect("valid");
        assert_eq!(
            sc.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(sc.span_id().to_string(), "b7ad6b7169203331");
        assert!(sc.is_remote());
        assert!(super::parse_traceparent("00-zz-1-01").is_none());
    }
}
