//! The create-only review resources (tokenreviews, subjectaccessreviews): a POST is answered
//! with an allowing status and nothing is stored. (The per-kind rules of ordinary writes are
//! `registry::strategy`.)

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
