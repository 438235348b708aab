//! Update (PUT) and patch (PATCH) of an item or its `/status` (spec §1.6.3–1.6.4). Both build a
//! new object from the stored one and go through one update path: type/name/namespace checks,
//! resourceVersion precondition, immutable fields, status-subresource rules, finalizers of an
//! object being deleted, generation, validation — then a no-op write changes nothing, and an
//! update that removes the last finalizer of a deleting object removes it.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::api::patch::{Patch, Target};
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::endpoints::{Body, Req};
use crate::registry::ResourceType;
use crate::registry::context::State;
use crate::router::ResourceRoute;
use crate::storage::{Change, Outcome};
use crate::{api::meta, crd, kinds};

pub(crate) fn put(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let who = super::Who::of(req, r)?;
    let w = who.opts(&req.query)?;
    let mut body = crate::endpoints::decode_body(req)?;
    crate::registry::objects::check_type(
        &mut body,
        &r.rt,
        &crate::registry::objects::siblings(state, &r.rt),
    )?;
    super::fields::check(&r.rt, &body, req)?;
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
    Ok(super::respond(200, &out, &r.rt, req))
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
    if ct != "application/apply-patch+yaml" && req.query.flag("force")? {
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
            "server-side apply is served by crate::apply",
        ));
    }
    let rt = r.rt.clone();
    let p = Patch::decode(ct, &req.body, Target::of(rt.crd.is_some()))?;
    let served_rt = rt.clone();
    let mode = super::fields::mode(req)?;
    let (out, _) = update_object(
        state,
        &rt,
        r.namespace.as_deref(),
        name,
        r.sub.as_deref(),
        w,
        false,
        move |cur| {
            let doc = crate::registry::objects::served(cur, &served_rt).into_owned();
            let new = p.apply(&doc)?;
            if !new.is_object() {
                return Err(ApiError::bad_request(
                    "the patched object is not a JSON object",
                ));
            }
            // As upstream's patcher: a patched object that does not decode is 422 on `patch`.
            meta::check_types(&new).map_err(|e| {
                let cause = FieldCause::invalid("patch", &json!(new.to_string()), &e);
                ApiError::invalid("", "", "", &[cause])
            })?;
            if mode != super::fields::Mode::Ignore {
                super::fields::check(&served_rt, &new, req)?;
            }
            Ok(new)
        },
    )?;
    Ok(super::respond(200, &out, &r.rt, req))
}

/// The shared update path. `make` builds the new object from the stored one. `put` marks a PUT
/// (custom resources then require `metadata.resourceVersion`). Returns the resulting object and
/// whether it was removed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update_object(
    state: &Arc<State>,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    w: super::WriteOpts<'_>,
    put: bool,
    make: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<(Arc<Value>, bool), ApiError> {
    let key = rt.store_key();
    let okey = crate::registry::objects::okey(rt, ns, name);
    let status_write = sub == Some("status");
    let sibs = crate::registry::objects::siblings(state, rt);
    let out = state.store.commit(&key, &okey, w.dry_run, |cur| {
        let Some(cur) = cur else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let mut new = make(cur)?;
        let given_fields = new
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        crate::registry::objects::check_type(&mut new, rt, &sibs)?;
        check_identity(&mut new, rt, ns, name)?;
        check_preconditions(cur, &new, rt, name, put)?;
        meta::keep_immutable(&mut new, cur);
        new = status_rules(cur, new, rt, status_write);
        // finalizers of an object being deleted
        let deleting = meta::meta_str(cur, "deletionTimestamp").is_some();
        if deleting {
            let old_f = meta::finalizers(cur);
            if meta::finalizers(&new).iter().any(|f| !old_f.contains(f)) {
                let cause = FieldCause::forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted",
                );
                return Err(ApiError::invalid(&rt.group, &rt.kind, name, &[cause]));
            }
        }
        kinds::normalize(rt, &mut new, false);
        meta::normalize(&mut new);
        super::validate(rt, &mut new)?;
        crd::on_write(state, rt, Some(cur), &mut new)?;
        crd::validate_custom(rt, &mut new, w.strict)?;
        if rt.generation && !status_write && meta::spec_changed(cur, &new, rt.status) {
            meta::set_meta(&mut new, "generation", json!(meta::generation(cur) + 1));
        }
        if let Some(who) = &w.manager {
            crate::apply::record_update(rt, Some(cur), &mut new, given_fields.as_ref(), who);
        }
        // Upstream's shouldDeleteDuringUpdate: a graceful deletion (simulated Pods) waits.
        let graceful = cur
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|g| g > 0);
        if deleting
            && !graceful
            && meta::finalizers(&new).is_empty()
            && !namespace_finalizers(rt, &new)
        {
            return Ok(Change::Remove);
        }
        Ok(Change::Put(new))
    })?;
    let (obj, removed) = match out {
        Outcome::Deleted(v) => (v, true),
        Outcome::Created(v) | Outcome::Updated(v) | Outcome::Unchanged(v) => (v, false),
    };
    if !w.dry_run {
        crd::after_write(state, rt, &obj, removed);
        crate::gc::after_write(state, rt, &obj, removed);
    }
    Ok((obj, removed))
}

/// The object's name must be the URL's (set when missing); a namespaced object's namespace
/// must be the URL's (set when missing), a cluster-scoped one has none.
fn check_identity(
    new: &mut Value,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    match meta::meta_str(new, "name") {
        None | Some("") => meta::set_meta(new, "name", json!(name)),
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if rt.namespaced {
        let url_ns = ns.unwrap_or("");
        match meta::meta_str(new, "namespace") {
            None | Some("") => meta::set_meta(new, "namespace", json!(url_ns)),
            Some(n) if n != url_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
    } else {
        meta::remove_meta(new, "namespace");
    }
    Ok(())
}

/// Optimistic concurrency: a resourceVersion given must be the stored one (a PUT of a custom
/// resource must give one), and a uid given must be the stored one.
fn check_preconditions(
    cur: &Value,
    new: &Value,
    rt: &ResourceType,
    name: &str,
    put: bool,
) -> Result<(), ApiError> {
    let cur_rv = meta::meta_str(cur, "resourceVersion").unwrap_or("");
    match meta::meta_str(new, "resourceVersion").filter(|v| !v.is_empty()) {
        Some(rv) if rv != cur_rv => return Err(ApiError::conflict(&rt.group, &rt.plural, name)),
        None if put && rt.crd.is_some() => {
            let cause = FieldCause::invalid(
                "metadata.resourceVersion",
                &json!("0x0"),
                "must be specified for an update",
            );
            let mut e = ApiError::invalid(&rt.group, &rt.kind, name, &[cause]);
            e.message = format!(
                "{} {name:?} is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                crate::api::status::qualified(&rt.group, &rt.plural)
            );
            return Err(e);
        }
        _ => {}
    }
    if let Some(uid) = meta::meta_str(new, "uid").filter(|u| !u.is_empty())
        && Some(uid) != meta::meta_str(cur, "uid")
    {
        let cause = FieldCause::invalid("metadata.uid", &json!(uid), "field is immutable");
        return Err(ApiError::invalid(&rt.group, &rt.kind, name, &[cause]));
    }
    Ok(())
}

/// The status subresource rules: a `/status` write changes only status (and managedFields);
/// a write of the main resource of a type with a status subresource keeps the stored status.
fn status_rules(cur: &Value, mut new: Value, rt: &ResourceType, status_write: bool) -> Value {
    if status_write {
        let mut merged = cur.clone();
        // managedFields follow the write (server-side apply to /status records its entry).
        if let Some(mf) = new.get("metadata").and_then(|m| m.get("managedFields")) {
            meta::set_meta(&mut merged, "managedFields", mf.clone());
        }
        match new.get("status") {
            Some(s) => merged["status"] = s.clone(),
            None => {
                if let Some(o) = merged.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        new = merged;
    } else if rt.status {
        match cur.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    new
}

/// A namespace is held by its `spec.finalizers` too.
pub(crate) fn namespace_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    rt.group.is_empty()
        && rt.plural == "namespaces"
        && obj
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}
