//! The metrics server: `/metrics` in Prometheus text format over the process-wide
//! [`registry`](crate::metrics::registry) (controller-runtime's `pkg/metrics/server`),
//! and its authentication and authorization [`filters`] (Go's `pkg/metrics/filters`).
//!
//! Apart from [`crate::metrics`] as in Go: the registry is a leaf every layer registers
//! in, the server sits on [`crate::http`], [`crate::tls`] and [`crate::certwatcher`].
//! The manager binds it on `metrics_bind_address` (default [`DEFAULT_BIND_ADDRESS`],
//! `"0"` disables) and runs it in its HTTP-servers group; extra handlers can be added
//! before start. It is an ordinary [`http::Server`](crate::http::Server) with
//! [`router`]; `process_*` metrics ([`crate::metrics::process`]) and `tokio_*` metrics
//! ([`crate::metrics::runtime`]) are registered when the router is built.
//!
//! [`Options`] (the manager's `Options::metrics`, Go's `metricsserver.Options`) make it
//! secure: HTTPS ([`crate::tls`]) with the certificate in `cert_dir` (kept current by a
//! [`CertWatcher`]) or, when that has none, a self-signed one; and a filter around every
//! handler, usually [`filters::with_authentication_and_authorization`]. The default
//! stays plain HTTP, as controller-runtime's; kubebuilder's `--metrics-secure` (the
//! manager's `Args`, default true) turns both on.

pub mod filters;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use http::{HeaderValue, StatusCode, header};
use prometheus::{Encoder, Registry, TextEncoder};

use crate::certwatcher::{CertWatcher, DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use crate::http::{Handler, Request, Response, Router, text};
use crate::tls::{self, TlsOptions};
use filters::{Filter, FilterProvider};

/// Where the metrics are served (Go's `defaultMetricsEndpoint`).
pub const METRICS_PATH: &str = "/metrics";

/// controller-runtime's default metrics bind address.
pub const DEFAULT_BIND_ADDRESS: &str = ":8080";

/// The Prometheus text format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves a registry in the Prometheus text format (Go's `promhttp.HandlerFor` with
/// `HTTPErrorOnError`: an encoding failure is a `500`).
#[derive(Clone)]
pub struct MetricsHandler {
    registry: Registry,
}

impl std::fmt::Debug for MetricsHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsHandler").finish_non_exhaustive()
    }
}

impl MetricsHandler {
    /// A handler for the process-wide registry.
    pub fn new() -> Self {
        Self::for_registry(crate::metrics::registry().clone())
    }

    /// A handler for another registry.
    pub fn for_registry(registry: Registry) -> Self {
        Self { registry }
    }

    /// The current exposition text.
    pub fn render(&self) -> Result<Vec<u8>, prometheus::Error> {
        let mut buf = Vec::with_capacity(16 * 1024);
        TextEncoder::new().encode(&self.registry.gather(), &mut buf)?;
        Ok(buf)
    }
}

impl Default for MetricsHandler {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Handler for MetricsHandler {
    async fn call(&self, _req: Request) -> Response {
        match self.render() {
            Ok(buf) => {
                let mut resp = text(StatusCode::OK, buf);
                resp.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
                resp
            }
            Err(error) => {
                tracing::error!(%error, "error encoding metrics");
                text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("An error has occurred while serving metrics:\n\n{error}\n"),
                )
            }
        }
    }
}

/// Why an extra handler was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExtraHandlerError {
    /// The path is `/metrics`.
    #[error("overriding builtin {METRICS_PATH} endpoint is not allowed")]
    Builtin,
    /// The path already has a handler.
    #[error("can't register extra handler by duplicate path {0:?} on metrics http server")]
    Duplicate(String),
    /// The path does not start with `/`.
    #[error("extra handler path {0:?} must start with '/'")]
    BadPath(String),
}

/// Extra handlers for the metrics server, keyed by path (Go's `ExtraHandlers`).
#[derive(Clone, Default)]
pub struct ExtraHandlers(BTreeMap<String, Arc<dyn Handler>>);

impl std::fmt::Debug for ExtraHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl ExtraHandlers {
    /// Adds `handler` at `path` (exact, or a subtree if it ends in `/`).
    pub fn add(
        &mut self,
        path: impl Into<String>,
        handler: impl Handler,
    ) -> Result<(), ExtraHandlerError> {
        let path = path.into();
        if path == METRICS_PATH {
            return Err(ExtraHandlerError::Builtin);
        }
        if !path.starts_with('/') {
            return Err(ExtraHandlerError::BadPath(path));
        }
        if self.0.contains_key(&path) {
            return Err(ExtraHandlerError::Duplicate(path));
        }
        tracing::debug!(path = %path, "Registering metrics http server extra handler");
        self.0.insert(path, Arc::new(handler));
        Ok(())
    }
}

/// The default certificate directory of the secure metrics server:
/// `<tmp>/k8s-metrics-server/serving-certs`.
pub fn default_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-metrics-server")
        .join("serving-certs")
}

/// How the metrics server serves (Go's `metricsserver.Options`; the bind address and
/// extra handlers are the manager's `metrics_bind_address` and
/// `add_metrics_extra_handler`).
#[derive(Clone)]
pub struct Options {
    /// Serve HTTPS instead of HTTP (Go's `SecureServing`). Default false.
    pub secure_serving: bool,
    /// Where `cert_name` and `key_name` are; when they are not both there a
    /// self-signed certificate is served. Default [`default_cert_dir`].
    pub cert_dir: PathBuf,
    /// The certificate file; default `tls.crt`.
    pub cert_name: String,
    /// The key file; default `tls.key`.
    pub key_name: String,
    /// Builds the filter wrapped around `/metrics` and every extra handler (Go's
    /// `FilterProvider`), e.g. [`filters::with_authentication_and_authorization`].
    /// Default none.
    pub filter_provider: Option<FilterProvider>,
    /// TLS hardening when secure (Go's `TLSOpts`): HTTP/2 off unless enabled, TLS 1.2+.
    pub tls: TlsOptions,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            secure_serving: false,
            cert_dir: default_cert_dir(),
            cert_name: DEFAULT_CERT_NAME.into(),
            key_name: DEFAULT_KEY_NAME.into(),
            filter_provider: None,
            tls: TlsOptions::default(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("secure_serving", &self.secure_serving)
            .field("cert_dir", &self.cert_dir)
            .field("cert_name", &self.cert_name)
            .field("key_name", &self.key_name)
            .field("filter_provider", &self.filter_provider.is_some())
            .field("tls", &self.tls)
            .finish()
    }
}

impl Options {
    /// The TLS the server serves with, or `None` when not secure: the certificate
    /// pair in `cert_dir` if both files exist (watched for changes), else a
    /// self-signed certificate for `localhost` / `127.0.0.1`.
    pub fn tls_serving(&self) -> Result<Option<tls::Serving>, String> {
        if !self.secure_serving {
            return Ok(None);
        }
        let (cert, key) = (
            self.cert_dir.join(&self.cert_name),
            self.cert_dir.join(&self.key_name),
        );
        let (resolver, watcher) = if exists(&cert) && exists(&key) {
            let w = Arc::new(CertWatcher::new(&cert, &key).map_err(|e| e.to_string())?);
            tracing::info!(cert = %cert.display(), "metrics server certificate from files");
            (
                w.clone() as Arc<dyn rustls::server::ResolvesServerCert>,
                Some(w),
            )
        } else {
            tracing::info!("metrics server serves a self-signed certificate");
            let fixed = tls::self_signed()?;
            (
                Arc::new(fixed) as Arc<dyn rustls::server::ResolvesServerCert>,
                None,
            )
        };
        let cfg = self.tls.server_config(resolver, None)?;
        Ok(Some(tls::Serving::new(cfg, watcher)))
    }

    /// The filter of `filter_provider`, built on `client`.
    pub fn filter(&self, client: &kube::Client) -> Result<Option<Filter>, String> {
        match &self.filter_provider {
            None => Ok(None),
            Some(p) => p(client).map(Some).map_err(|e| {
                format!("filter provider failed to create filter for the metrics server: {e}")
            }),
        }
    }
}

fn exists(p: &Path) -> bool {
    p.try_exists().unwrap_or(false)
}

/// The metrics server's routes: `/metrics` over the process-wide registry (with the
/// `process_*` and `tokio_*` collectors registered) plus `extra`.
pub fn router(extra: &ExtraHandlers) -> Router {
    filtered_router(extra, None)
}

/// [`router`] with every handler wrapped in `filter` (Go wraps `/metrics` and each
/// extra handler).
pub fn filtered_router(extra: &ExtraHandlers, filter: Option<&Filter>) -> Router {
    crate::metrics::process::register();
    crate::metrics::runtime::register();
    let wrap = |h: Arc<dyn Handler>| match filter {
        Some(f) => f(h),
        None => h,
    };
    let mut r = Router::new();
    r.handle(METRICS_PATH, wrap(Arc::new(MetricsHandler::new())));
    for (path, h) in &extra.0 {
        r.handle(path.clone(), wrap(h.clone()));
    }
    r
}
