//! The metrics server: `/metrics` in Prometheus text format over the process-wide
//! [`registry`](super::registry) (controller-runtime's `metrics/server`).
//!
//! The manager (`crate::manager`) binds it on `metrics_bind_address` (default
//! [`DEFAULT_BIND_ADDRESS`], `"0"` disables) and runs it in its HTTP-servers group;
//! extra handlers can be added before start. It is an ordinary
//! [`http::Server`](crate::http::Server) with [`router`]; `process_*` metrics
//! ([`super::process`]) and `tokio_*` metrics ([`super::runtime`]) are registered
//! when the router is built.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use http::{HeaderValue, StatusCode, header};
use prometheus::{Encoder, Registry, TextEncoder};

use crate::http::{Handler, Request, Response, Router, text};

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
        Self::for_registry(super::registry().clone())
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

/// The metrics server's routes: `/metrics` over the process-wide registry (with the
/// `process_*` and `tokio_*` collectors registered) plus `extra`.
pub fn router(extra: &ExtraHandlers) -> Router {
    super::process::register();
    super::runtime::register();
    let mut r = Router::new();
    r.handle(METRICS_PATH, MetricsHandler::new());
    for (path, h) in &extra.0 {
        r.handle(path.clone(), h.clone());
    }
    r
}
