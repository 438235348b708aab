//! Type-specific rules of a few built-ins applied on writes (spec §1.6.1 item 7, §1.16): Secret
//! `stringData` folded into `data`, Namespace label / finalizer / phase, and the create-only
//! review resources (tokenreviews, subjectaccessreviews) answered without storing anything.
//! CRDs have their own module, `crd`.

use http::Response;
use serde_json::json;

use crate::api::status::ApiError;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;

/// POST to a review resource: echo it with an allowing status.
pub(crate) fn review(rt: &ResourceType, req: &Req) -> Result<Response<Body>, ApiError> {
    let mut obj = crate::endpoints::decode_body(req)?;
    crate::registry::objects::check_type(&mut obj, rt, &[])?;
    obj["status"] = match rt.plural.as_str() {
        "tokenreviews" => {
            json!({"authenticated": true, "user": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}})
        }
        _ => json!({"allowed": true, "reason": "ctrl-envtest authorizes every request"}),
    };
    Ok(endpoints::json(201, &obj))
}
