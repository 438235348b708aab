//! [`TraceparentLayer`]: a tower layer for a kube client's HTTP stack that sends the current
//! span's W3C `traceparent` with every request, so the API server (and its webhooks, and the
//! objects it writes, where it stamps them) can continue the reconcile's trace.

use std::task::{Context, Poll};

use http::{HeaderValue, Request};
use tower::{Layer, Service};

/// Adds the `traceparent` header of the current span (when it has an OpenTelemetry context)
/// to every request. Use it on a client built with kube's `ClientBuilder`:
/// `ClientBuilder::try_from(config)?.with_layer(&TraceparentLayer).build()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceparentLayer;

impl<S> Layer<S> for TraceparentLayer {
    type Service = Traceparent<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Traceparent(inner)
    }
}

/// The service [`TraceparentLayer`] wraps a client's stack in.
#[derive(Clone, Debug)]
pub struct Traceparent<S>(S);

impl<S, B> Service<Request<B>> for Traceparent<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(v) = super::traceparent_of(&tracing::Span::current())
            .and_then(|tp| HeaderValue::from_str(&tp).ok())
        {
            req.headers_mut().insert("traceparent", v);
        }
        self.0.call(req)
    }
}
