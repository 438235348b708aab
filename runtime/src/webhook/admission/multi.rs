//! Several admission handlers behind one path (Go's `admission.MultiMutatingHandler`
//! and `MultiValidatingHandler`).
//!
//! Each handler is asked in turn about the same request; the first that does not
//! allow it answers for all. Otherwise [`MultiMutating`] allows with every handler's
//! JSON patch concatenated in order (each computed against the object as sent, as in
//! Go), and [`MultiValidating`] allows; both keep every handler's warnings.

use async_trait::async_trait;

use super::Handler;
use super::review::{Request, Response};

/// Runs mutating handlers in order and concatenates their patches (Go's
/// `MultiMutatingHandler`).
pub struct MultiMutating(Vec<Box<dyn Handler>>);

/// Runs validating handlers in order; the first denial wins (Go's
/// `MultiValidatingHandler`).
pub struct MultiValidating(Vec<Box<dyn Handler>>);

/// A handler running `handlers` as one mutating webhook.
pub fn multi_mutating_handler(
    handlers: impl IntoIterator<Item = Box<dyn Handler>>,
) -> MultiMutating {
    MultiMutating(handlers.into_iter().collect())
}

/// A handler running `handlers` as one validating webhook.
pub fn multi_validating_handler(
    handlers: impl IntoIterator<Item = Box<dyn Handler>>,
) -> MultiValidating {
    MultiValidating(handlers.into_iter().collect())
}

#[async_trait]
impl Handler for MultiMutating {
    async fn handle(&self, req: &Request) -> Response {
        let mut ops = Vec::new();
        let mut warnings = Vec::new();
        for h in &self.0 {
            let resp = h.handle(req).await;
            if !resp.allowed {
                return resp;
            }
            if let Some(t) = resp.patch_type.as_deref().filter(|t| *t != "JSONPatch") {
                return Response::errored(
                    500,
                    format!(
                        "unexpected patch type returned by the handler: {t}, only allow: JSONPatch"
                    ),
                );
            }
            match resp.decoded_patch() {
                Ok(Some(patch)) => ops.extend(patch.0),
                Ok(None) => {}
                Err(e) => return Response::errored(500, e),
            }
            warnings.extend(resp.warnings);
        }
        Response::patched(&json_patch::Patch(ops)).with_warnings(warnings)
    }
}

#[async_trait]
impl Handler for MultiValidating {
    async fn handle(&self, req: &Request) -> Response {
        let mut warnings = Vec::new();
        for h in &self.0 {
            let resp = h.handle(req).await;
            if !resp.allowed {
                return resp;
            }
            warnings.extend(resp.warnings);
        }
        Response::allowed("").with_warnings(warnings)
    }
}
