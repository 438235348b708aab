//! [`CustomDefaulter`]: fills in defaults on create and update (Go's
//! `admission.CustomDefaulter` and its `defaulterForType` handler).
//!
//! The handler decodes the object into `K`, lets the defaulter change it, and
//! answers with the JSON patch (json-patch 4.x `diff`) from the object as sent to
//! the object as defaulted. As in Go, `remove` operations are dropped by default:
//! fields `K` does not model would otherwise be removed just by the round trip
//! through `K` ([`DefaulterHandler::remove_unknown_or_omitable_fields`] keeps them).

use std::marker::PhantomData;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::review::{Operation, Request, Response};
use super::validator::ValidationError;
use super::{Handler, Webhook};

/// Sets defaults on an object of kind `K` (Go's `CustomDefaulter`).
#[async_trait]
pub trait CustomDefaulter<K>: Send + Sync + 'static {
    /// Changes `obj` in place (Go's `Default`; named so that it does not clash with
    /// `Default::default` on a type that is both). An error denies the request with its
    /// code and message.
    async fn set_defaults(&self, req: &Request, obj: &mut K) -> Result<(), ValidationError>;
}

/// The admission [`Handler`] around a [`CustomDefaulter`].
pub struct DefaulterHandler<K, D> {
    defaulter: D,
    keep_removals: bool,
    _k: PhantomData<fn() -> K>,
}

impl<K, D> DefaulterHandler<K, D> {
    /// A handler for `defaulter`.
    pub fn new(defaulter: D) -> Self {
        Self {
            defaulter,
            keep_removals: false,
            _k: PhantomData,
        }
    }

    /// Keep `remove` operations in the patch (Go's
    /// `DefaulterRemoveUnknownOrOmitableFields`): fields `K` does not know are removed.
    pub fn remove_unknown_or_omitable_fields(mut self, yes: bool) -> Self {
        self.keep_removals = yes;
        self
    }
}

/// A [`Webhook`] serving `defaulter` for `K` (Go's `WithCustomDefaulter`).
pub fn defaulting_webhook<K, D>(defaulter: D) -> Webhook
where
    K: DeserializeOwned + Serialize + Send + Sync + 'static,
    D: CustomDefaulter<K>,
{
    Webhook::new(DefaulterHandler::<K, D>::new(defaulter))
}

#[async_trait]
impl<K, D> Handler for DefaulterHandler<K, D>
where
    K: DeserializeOwned + Serialize + Send + Sync + 'static,
    D: CustomDefaulter<K>,
{
    async fn handle(&self, req: &Request) -> Response {
        if !matches!(req.operation, Operation::Create | Operation::Update) {
            return Response::allowed("");
        }
        let Some(raw) = &req.object else {
            return Response::errored(400, "there is no object to default");
        };
        let mut obj: K = match serde_json::from_value(raw.clone()) {
            Ok(o) => o,
            Err(e) => return Response::errored(400, format!("decoding the object: {e}")),
        };
        if let Err(e) = self.defaulter.set_defaults(req, &mut obj).await {
            return e.into_response();
        }
        let defaulted = match serde_json::to_value(&obj) {
            Ok(v) => v,
            Err(e) => return Response::errored(500, format!("encoding the object: {e}")),
        };
        let mut patch = json_patch::diff(raw, &defaulted);
        if !self.keep_removals {
            patch
                .0
                .retain(|op| !matches!(op, json_patch::PatchOperation::Remove(_)));
        }
        Response::patched(&patch)
    }
}
