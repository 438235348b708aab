//! [`Webhook`]: an admission [`Handler`](super::Handler) served over HTTP (Go's
//! `admission.Webhook.ServeHTTP`): body and content type checked, review decoded,
//! handler run with panic recovery, review encoded.
//!
//! Unlike Go, which answers garbage with `200` and a failed review, input that is not
//! a v1 `AdmissionReview` with a request gets an HTTP `400` (`413` when too big),
//! still with a review body saying why, so a caller sees a clear client error.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Full;

use super::Handler;
use super::review::{API_VERSION, AdmissionReview, KIND, Response};
use crate::error::panic_message;
use crate::http as h;
use crate::webhook::metrics;

/// The largest review accepted: 7 MiB (the API server's own limit on objects is
/// 3 MiB; a review holds two).
pub const MAX_REQUEST_BYTES: usize = 7 * 1024 * 1024;

/// Builds what a handler can read with [`context`] from the HTTP request that carried
/// the review (Go's `WithContextFunc`).
pub type ContextFn = Arc<dyn Fn(&h::Request) -> http::Extensions + Send + Sync>;

tokio::task_local! {
    static CONTEXT: http::Extensions;
}

/// A value the webhook's [`ContextFn`] put in the handler's context (Go's
/// `ctx.Value` on the context `WithContextFunc` returned); `None` outside a handler,
/// without a context function, or if it put no `T`.
pub fn context<T: Clone + Send + Sync + 'static>() -> Option<T> {
    CONTEXT
        .try_with(|ext| ext.get::<T>().cloned())
        .ok()
        .flatten()
}

/// Serves an admission handler (Go's `admission.Webhook`).
pub struct Webhook {
    handler: Box<dyn Handler>,
    recover_panic: bool,
    context_fn: Option<ContextFn>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("recover_panic", &self.recover_panic)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// A webhook around `handler`; panics are recovered.
    pub fn new(handler: impl Handler) -> Self {
        Self {
            handler: Box::new(handler),
            recover_panic: true,
            context_fn: None,
        }
    }

    /// Runs `f` on each HTTP request and lets the handler read what it returns with
    /// [`context`] (Go's `WithContextFunc`): headers, the path, the peer's identity.
    pub fn with_context_fn(
        mut self,
        f: impl Fn(&h::Request) -> http::Extensions + Send + Sync + 'static,
    ) -> Self {
        self.context_fn = Some(Arc::new(f));
        self
    }

    /// [`Webhook::with_context_fn`] with a shared function (the builder's).
    pub fn with_context_fn_shared(mut self, f: Option<ContextFn>) -> Self {
        self.context_fn = f;
        self
    }

    /// Whether a panicking handler becomes a `500` denial (default true, as Go's
    /// `RecoverPanic`). With false the panic propagates to the server, which still
    /// answers `500` but without a review.
    pub fn recover_panic(mut self, recover: bool) -> Self {
        self.recover_panic = recover;
        self
    }

    /// Runs the handler on a decoded review's request and fills in the uid.
    pub async fn review(&self, review: AdmissionReview) -> Response {
        self.review_in(review, http::Extensions::new()).await
    }

    /// [`Webhook::review`] with `ext` readable through [`context`].
    async fn review_in(&self, review: AdmissionReview, ext: http::Extensions) -> Response {
        let Some(req) = review.request else {
            return Response::errored(400, "AdmissionReview has no request");
        };
        let fut = CONTEXT.scope(ext, self.handler.handle(&req));
        let mut resp = if self.recover_panic {
            match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                Ok(r) => r,
                Err(panic) => {
                    metrics::panic_observed();
                    let what = panic_message(&*panic);
                    tracing::error!(uid = %req.uid, panic = %what, "panic in admission handler");
                    Response::errored(500, format!("panic: {what} [recovered]"))
                }
            }
        } else {
            fut.await
        };
        resp.uid = req.uid;
        resp
    }
}

/// Why `req` is not `application/json` (Go's webhooks accept nothing else), if it
/// is not.
pub(crate) fn not_json(req: &h::Request) -> Option<String> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (ct.split(';').next().map(str::trim) != Some("application/json"))
        .then(|| format!("contentType={ct}, expected application/json"))
}

fn reply(status: StatusCode, resp: Response) -> h::Response {
    let body = serde_json::to_vec(&AdmissionReview::answer(resp)).unwrap_or_default();
    let mut out = http::Response::new(Full::new(Bytes::from(body)));
    *out.status_mut() = status;
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

fn bad(status: StatusCode, msg: impl Into<String>) -> h::Response {
    let msg = msg.into();
    tracing::error!(error = %msg, "bad admission request");
    reply(status, Response::errored(status.as_u16(), msg))
}

#[async_trait]
impl h::Handler for Webhook {
    async fn call(&self, req: h::Request) -> h::Response {
        if req.method() != http::Method::POST {
            return bad(StatusCode::METHOD_NOT_ALLOWED, "only POST is allowed");
        }
        let body = req.body();
        if body.is_empty() {
            return bad(StatusCode::BAD_REQUEST, "request body is empty");
        }
        if body.len() > MAX_REQUEST_BYTES {
            return bad(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request entity is too large; limit is {MAX_REQUEST_BYTES} bytes"),
            );
        }
        if let Some(msg) = not_json(&req) {
            return bad(StatusCode::BAD_REQUEST, msg);
        }
        let raw: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return bad(
                    StatusCode::BAD_REQUEST,
                    format!("couldn't decode the AdmissionReview: {e}"),
                );
            }
        };
        let (api_version, kind) = (raw.get("apiVersion"), raw.get("kind"));
        if kind.and_then(|k| k.as_str()) != Some(KIND)
            || api_version.and_then(|v| v.as_str()) != Some(API_VERSION)
        {
            return bad(
                StatusCode::BAD_REQUEST,
                format!(
                    "expected {API_VERSION} {KIND}, got apiVersion={} kind={}",
                    api_version.unwrap_or(&serde_json::Value::Null),
                    kind.unwrap_or(&serde_json::Value::Null)
                ),
            );
        }
        if raw.get("request").is_none_or(|r| r.is_null()) {
            return bad(StatusCode::BAD_REQUEST, "AdmissionReview has no request");
        }
        let review: AdmissionReview = match serde_json::from_value(raw) {
            Ok(r) => r,
            Err(e) => {
                return bad(
                    StatusCode::BAD_REQUEST,
                    format!("couldn't decode the AdmissionReview: {e}"),
                );
            }
        };
        let ext = self
            .context_fn
            .as_ref()
            .map(|f| f(&req))
            .unwrap_or_default();
        let resp = self.review_in(review, ext).await;
        tracing::debug!(uid = %resp.uid, allowed = resp.allowed, code = resp.status.as_ref().map(|s| s.code), "admission decided");
        reply(StatusCode::OK, resp)
    }
}
