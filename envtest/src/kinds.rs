//! Type-specific rules of a few built-ins applied on writes (spec §1.6.1 item 7, §1.16): Secret
//! `stringData` folded into `data`, Namespace label / finalizer / phase, and the create-only
//! review resources (tokenreviews, subjectaccessreviews) answered without storing anything.
//! CRDs have their own module, `crd`.

use base64::Engine;
use http::Response;
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;

fn is(rt: &ResourceType, group: &str, plural: &str) -> bool {
    rt.group == group && rt.plural == plural && rt.crd.is_none()
}

/// Normalises a built-in object before it is stored (create and update).
pub(crate) fn normalize(rt: &ResourceType, obj: &mut Value, create: bool) {
    if is(rt, "", "secrets") {
        if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = json!({});
            }
            for (k, v) in sd {
                let s = v.as_str().unwrap_or_default();
                obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(s));
            }
        }
        if create && obj.get("type").is_none() {
            obj["type"] = json!("Opaque");
        }
    }
    if is(rt, "", "namespaces") {
        let name = crate::api::meta::name(obj).to_string();
        let m = crate::api::meta::meta_mut(obj);
        if !m.get("labels").is_some_and(Value::is_object) {
            m.insert("labels".into(), json!({}));
        }
        m["labels"]["kubernetes.io/metadata.name"] = json!(name);
        if create {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
    }
}

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
