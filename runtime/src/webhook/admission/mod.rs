//! Admission webhooks: defaulting (mutating) and validating (controller-runtime's
//! `pkg/webhook/admission`).
//!
//! A [`Handler`] answers one [`Request`] with a [`Response`]. [`Webhook`] serves a
//! handler over HTTP: it decodes the `AdmissionReview` (`review`), recovers a
//! panicking handler into a `500` denial (counted in
//! `controller_runtime_webhook_panics_total`) and writes the review back (`http`).
//! The typed handlers most operators use are [`CustomDefaulter`] (the response
//! carries the JSON patch between the object as sent and as defaulted) and
//! [`CustomValidator`] (create / update(old, new) / delete, each returning warnings
//! or a denial). [`multi_mutating_handler`] and [`multi_validating_handler`] serve
//! several handlers at one path (`multi`). [`field`] builds the `422 Invalid` denial of
//! a list of field errors, worded as kube-apiserver words it. The webhook server ([`crate::webhook::Server`]) routes paths to
//! webhooks; `ctrl-builder`'s `WebhookBuilder` registers them under kubebuilder's
//! paths.

mod defaulter;
pub mod field;
mod http;
pub(crate) use http::not_json;
mod multi;
mod review;
mod validator;

use std::sync::Arc;

use async_trait::async_trait;

/// What a [`ContextFn`] returns: typed values by type (`http::Extensions`).
pub use ::http::Extensions;
pub use defaulter::{CustomDefaulter, DefaulterHandler, defaulting_webhook};
pub use http::{ContextFn, MAX_REQUEST_BYTES, Webhook, context};
pub use multi::{MultiMutating, MultiValidating, multi_mutating_handler, multi_validating_handler};
pub use review::{API_VERSION, AdmissionReview, KIND, Operation, Request, Response, ResultStatus};
pub use validator::{
    CustomValidator, ValidationError, ValidatorHandler, Warnings, validating_webhook,
};

/// Answers admission requests (Go's `admission.Handler`).
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Decides on `req`. Failures are responses ([`Response::errored`]).
    async fn handle(&self, req: &Request) -> Response;
}

#[async_trait]
impl<H: Handler + ?Sized> Handler for Arc<H> {
    async fn handle(&self, req: &Request) -> Response {
        (**self).handle(req).await
    }
}

/// A [`Handler`] from a synchronous closure; see [`handler_fn`].
pub struct HandlerFn<F>(F);

/// A handler from a closure (Go's `admission.HandlerFunc`).
pub fn handler_fn<F>(f: F) -> HandlerFn<F>
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    HandlerFn(f)
}

#[async_trait]
impl<F> Handler for HandlerFn<F>
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    async fn handle(&self, req: &Request) -> Response {
        (self.0)(req)
    }
}
