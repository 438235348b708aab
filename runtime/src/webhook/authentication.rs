//! Authentication webhooks (controller-runtime's `pkg/webhook/authentication`): the
//! API server sends a `TokenReview` with a bearer token, the webhook answers who it
//! belongs to.
//!
//! A [`TokenReviewHandler`] decides on one [`TokenReview`]; [`TokenReviewWebhook`]
//! serves it over HTTP on the webhook server (`super::Server::register`), as the
//! admission [`Webhook`](super::admission::Webhook) serves admission handlers: POST
//! with `application/json` only, the review's `apiVersion` and uid echoed back, a
//! panicking handler recovered into an errored review (counted in
//! `controller_runtime_webhook_panics_total`). Input that is not a `TokenReview` with a
//! token gets an HTTP `400` with an errored review saying why.

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Full;
pub use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewStatus, UserInfo};

use super::admission::{MAX_REQUEST_BYTES, not_json};
use super::metrics;
use crate::error::panic_message;
use crate::http as h;

/// Decides who a token belongs to (Go's `authentication.Handler`).
#[async_trait]
pub trait TokenReviewHandler: Send + Sync + 'static {
    /// Reviews `review` (its `spec.token`, `spec.audiences`); returns the status.
    async fn review(&self, review: &TokenReview) -> TokenReviewStatus;
}

/// The token belongs to `user` (Go's `authentication.Authenticated`).
pub fn authenticated(reason: impl Into<String>, user: UserInfo) -> TokenReviewStatus {
    review_response(true, user, reason.into())
}

/// The token does not authenticate (Go's `authentication.Unauthenticated`).
pub fn unauthenticated(reason: impl Into<String>, user: UserInfo) -> TokenReviewStatus {
    review_response(false, user, reason.into())
}

/// The review failed (Go's `authentication.Errored`).
pub fn errored(error: impl std::fmt::Display) -> TokenReviewStatus {
    TokenReviewStatus {
        authenticated: Some(false),
        error: Some(error.to_string()),
        ..TokenReviewStatus::default()
    }
}

fn review_response(authenticated: bool, user: UserInfo, error: String) -> TokenReviewStatus {
    TokenReviewStatus {
        authenticated: Some(authenticated),
        user: Some(user),
        error: (!error.is_empty()).then_some(error),
        audiences: None,
    }
}

/// Serves a [`TokenReviewHandler`] (Go's `authentication.Webhook`).
pub struct TokenReviewWebhook {
    handler: Box<dyn TokenReviewHandler>,
}

impl std::fmt::Debug for TokenReviewWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenReviewWebhook").finish_non_exhaustive()
    }
}

impl TokenReviewWebhook {
    /// A webhook around `handler`; register it with `server.register(path, ..)`.
    pub fn new(handler: impl TokenReviewHandler) -> Self {
        Self {
            handler: Box::new(handler),
        }
    }

    /// Runs the handler with panic recovery.
    async fn decide(&self, review: &TokenReview) -> TokenReviewStatus {
        match std::panic::AssertUnwindSafe(self.handler.review(review))
            .catch_unwind()
            .await
        {
            Ok(status) => status,
            Err(panic) => {
                metrics::panic_observed();
                let what = panic_message(&*panic);
                tracing::error!(panic = %what, "panic in token review handler");
                errored(format!("panic: {what} [recovered]"))
            }
        }
    }
}

/// `review` answered with `status`, as JSON with HTTP `code`.
fn reply(code: StatusCode, mut review: TokenReview, status: TokenReviewStatus) -> h::Response {
    review.status = Some(status);
    let uid = review.metadata.uid.take();
    review.metadata = Default::default();
    review.metadata.uid = uid;
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let mut out = http::Response::new(Full::new(Bytes::from(body)));
    *out.status_mut() = code;
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

fn bad(msg: impl Into<String>) -> h::Response {
    let msg = msg.into();
    tracing::error!(error = %msg, "bad token review request");
    reply(
        StatusCode::BAD_REQUEST,
        TokenReview::default(),
        errored(msg),
    )
}

/// Checks method, size and content type; the decoded review or why it is refused.
fn decode(req: &h::Request) -> Result<TokenReview, String> {
    if req.method() != http::Method::POST {
        return Err("only POST is allowed".into());
    }
    if req.body().len() > MAX_REQUEST_BYTES {
        return Err(format!(
            "request entity is too large; limit is {MAX_REQUEST_BYTES} bytes"
        ));
    }
    if let Some(msg) = not_json(req) {
        return Err(msg);
    }
    let review: TokenReview = serde_json::from_slice(req.body())
        .map_err(|e| format!("couldn't decode the TokenReview: {e}"))?;
    if review.spec.token.as_deref().unwrap_or("").is_empty() {
        return Err("token is empty".into());
    }
    Ok(review)
}

#[async_trait]
impl h::Handler for TokenReviewWebhook {
    async fn call(&self, req: h::Request) -> h::Response {
        let review = match decode(&req) {
            Ok(r) => r,
            Err(msg) => return bad(msg),
        };
        let status = self.decide(&review).await;
        tracing::debug!(authenticated = ?status.authenticated, "token review decided");
        reply(StatusCode::OK, review, status)
    }
}
