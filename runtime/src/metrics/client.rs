//! The kube client's request metrics under client-go's names (controller-runtime's
//! `pkg/metrics/client_go_adapter.go`): `rest_client_requests_total{code,method,host}`,
//! and, opt-in, `rest_client_request_duration_seconds{verb,host,path}`.
//!
//! client-go records these from inside its REST client; kube has no such hook, so
//! [`ClientMetricsLayer`] is a tower layer put on the client's service stack with
//! [`kube::client::ClientBuilder::with_layer`]. [`new_client`] builds a client with
//! it, and the manager's `Args::client` uses that, so the Manager's
//! client, its cache's watches and the Events recorder are all counted. A client built
//! some other way is not counted. Everything is registered in the process
//! [`registry`](super::registry).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};
use tower::{Layer, Service};

/// client-go's buckets for `rest_client_request_duration_seconds`.
pub const REQUEST_LATENCY_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The `code` label of a request that got no response (client-go's).
pub const NO_RESPONSE_CODE: &str = "<error>";

fn requests_total() -> &'static IntCounterVec {
    static M: OnceLock<IntCounterVec> = OnceLock::new();
    M.get_or_init(|| {
        let m = IntCounterVec::new(
            Opts::new(
                "rest_client_requests_total",
                "Number of HTTP requests, partitioned by status code, method, and host.",
            ),
            &["code", "method", "host"],
        )
        .expect("static metric definition is valid");
        let _ = super::registry().register(Box::new(m.clone()));
        m
    })
}

fn request_latency() -> &'static HistogramVec {
    static M: OnceLock<HistogramVec> = OnceLock::new();
    M.get_or_init(|| {
        let m = HistogramVec::new(
            HistogramOpts::new(
                "rest_client_request_duration_seconds",
                "Request latency in seconds. Broken down by verb and URL.",
            )
            .buckets(REQUEST_LATENCY_BUCKETS.to_vec()),
            &["verb", "host", "path"],
        )
        .expect("static metric definition is valid");
        let _ = super::registry().register(Box::new(m.clone()));
        m
    })
}

/// Counts every request of the client it wraps (see the module docs).
#[derive(Clone, Debug)]
pub struct ClientMetricsLayer {
    host: Arc<str>,
    latency: bool,
}

impl ClientMetricsLayer {
    /// Labels the requests with `host` (`host:port` of the API server, as client-go's
    /// `url.Host`); registers `rest_client_requests_total` now, so it is scraped
    /// before the first request.
    pub fn new(host: impl Into<String>) -> Self {
        let _ = requests_total();
        Self {
            host: Arc::from(host.into()),
            latency: false,
        }
    }

    /// Also observes `rest_client_request_duration_seconds{verb,host,path}`. Off by
    /// default (controller-runtime stopped registering it: its `path` label has one
    /// value per object).
    pub fn with_latency(mut self) -> Self {
        let _ = request_latency();
        self.latency = true;
        self
    }
}

impl<S> Layer<S> for ClientMetricsLayer {
    type Service = ClientMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientMetrics {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`ClientMetricsLayer`] makes.
#[derive(Clone, Debug)]
pub struct ClientMetrics<S> {
    inner: S,
    layer: ClientMetricsLayer,
}

impl<S, B, RB> Service<http::Request<B>> for ClientMetrics<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let path = self.layer.latency.then(|| req.uri().path().to_string());
        let host = self.layer.host.clone();
        let start = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let code = match &res {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => NO_RESPONSE_CODE.to_string(),
            };
            requests_total()
                .with_label_values(&[code.as_str(), method.as_str(), &host])
                .inc();
            if let Some(path) = path {
                request_latency()
                    .with_label_values(&[method.as_str(), &host, path.as_str()])
                    .observe(start.elapsed().as_secs_f64());
            }
            res
        })
    }
}

/// The `host` label for a client of `config`: its cluster URL's `host:port`.
pub fn host_of(config: &kube::Config) -> String {
    let uri = &config.cluster_url;
    match (uri.host(), uri.port_u16()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => String::new(),
    }
}

/// A kube client for `config` whose requests are counted (with the latency
/// histogram too when `latency`); see the module docs.
pub fn new_client(config: kube::Config, latency: bool) -> Result<kube::Client, kube::Error> {
    let mut layer = ClientMetricsLayer::new(host_of(&config));
    if latency {
        layer = layer.with_latency();
    }
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}
