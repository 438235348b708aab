//! [`Handler`]: what serves one route of a [`Router`](super::Router), and the
//! response helpers shared by the metrics and probe servers (Go's `http.Error` and
//! `http.NotFound`).

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Full;

/// The response body type of every handler: the whole body in memory.
pub type Body = Full<Bytes>;

/// A request as handlers see it: the body already read (and size-capped) by the server.
pub type Request = http::Request<Bytes>;

/// A response as handlers produce it.
pub type Response = http::Response<Body>;

/// Serves requests for one route (Go's `http.Handler`).
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Answers `req`. Never fails: errors are responses (`5xx` with a text body).
    async fn call(&self, req: Request) -> Response;
}

/// A [`Handler`] made from a synchronous closure; see [`handler_fn`].
pub struct HandlerFn<F>(F);

/// A [`Handler`] from a closure: `handler_fn(|_req| text(StatusCode::OK, "hi"))`.
pub fn handler_fn<F>(f: F) -> HandlerFn<F>
where
    F: Fn(Request) -> Response + Send + Sync + 'static,
{
    HandlerFn(f)
}

#[async_trait]
impl<F> Handler for HandlerFn<F>
where
    F: Fn(Request) -> Response + Send + Sync + 'static,
{
    async fn call(&self, req: Request) -> Response {
        (self.0)(req)
    }
}

#[async_trait]
impl<H: Handler + ?Sized> Handler for std::sync::Arc<H> {
    async fn call(&self, req: Request) -> Response {
        (**self).call(req).await
    }
}

/// A plain-text response with Go's `http.Error` headers (`text/plain; charset=utf-8`,
/// `X-Content-Type-Options: nosniff`) and `body` as is.
pub fn text(status: StatusCode, body: impl Into<Bytes>) -> Response {
    let mut resp = http::Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Go's `http.NotFound`: `404` with the body `404 page not found\n`.
pub fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}
