//! Update (PUT) and patch (PATCH) of an item or its `/status`
//! (`k8s.io/apiserver/pkg/endpoints/handlers/{update,patch}.go`). Both build a new object from the
//! stored one and go through the registry's one update path
//! ([`registry::hooks::update_object`](crate::registry::hooks::update_object): type/name/namespace
//! checks, resourceVersion precondition, immutable fields, status-subresource rules, finalizers of
//! an object being deleted, generation, validation — then a no-op write changes nothing, and an
//! update that removes the last finalizer of a deleting object removes it). A patch is applied
//! inside that path, to the object as committed, by [`api::patch`](crate::api::patch).

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::api::meta;
use crate::api::patch::{self, Patch};
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{Body, Req};
use crate::registry::hooks::{patch_object, update_object};
use crate::registry::rest::Target;

/// PUT of the request's body, or of `admitted`: the object admission produced from the body or
/// from a patch (which is then written as a replacement pinned to the version it was computed
/// from).
pub(crate) fn put(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
    admitted: Option<Value>,
) -> Result<Response<Body>, ApiError> {
    let who = super::Who::of(req, r)?;
    let w = who.opts(&req.query)?;
    let body = super::body(state, r, req, admitted)?;
    let (out, _) = update_object(
        state,
        &r.rt,
        r.namespace.as_deref(),
        name,
        r.sub.as_deref(),
        w,
        true,
        move |_| Ok(body),
    )?;
    Ok(super::respond_committed(200, &out, &r.rt, req))
}

pub(crate) fn patch(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let who = super::Who::of(req, r)?;
    let w = who.opts(&req.query)?;
    let ct = req.media_type();
    if ct != "application/apply-patch+yaml" && req.query.flag("force") {
        let cause = FieldCause::forbidden("force", "may not be specified for non-apply patch");
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[cause],
        ));
    }
    if ct == "application/apply-patch+yaml" {
        return Err(ApiError::internal(
            "server-side apply is served by the apply handler",
        ));
    }
    let rt = r.rt.clone();
    let (p, duplicates) =
        Patch::decode_noting_duplicates(ct, &req.body, patch::Target::of(rt.crd.is_some()))?;
    let served_rt = rt.clone();
    let mode = super::fields::mode(req)?;
    let at = Target {
        ns: r.namespace.as_deref(),
        name,
        sub: r.sub.as_deref(),
        put: false,
    };
    // Made outside the store lock, again if another write comes first: applying the patch reads
    // the object it is given only.
    let (out, _) = patch_object(state, &rt, at, w, move |cur| {
        let doc = crate::registry::objects::served(cur, &served_rt);
        let as_stored = matches!(doc, std::borrow::Cow::Borrowed(_));
        let new = p.apply_to(doc.into_owned())?;
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        // As upstream's patcher: a patched object that does not decode is 422 on `patch`.
        // Metadata the patch left as stored decoded when it was stored (most status patches):
        // not decoded again, nor compared when the patch names no metadata.
        let decoded = if as_stored && p.keeps("metadata") {
            new.get("metadata")
        } else {
            cur.get("metadata")
        };
        meta::check_types(&new, decoded).map_err(|e| {
            let cause = FieldCause::invalid("patch", &json!(new.to_string()), &e);
            ApiError::invalid("", "", "", &[cause])
        })?;
        if mode != super::fields::Mode::Ignore {
            super::fields::check_decoded(&served_rt, &new, req, duplicates.clone())?;
        }
        Ok(new)
    })?;
    Ok(super::respond_committed(200, &out, &r.rt, req))
}
