//! Create (POST on a collection, spec §1.6.1): decode, check type and namespace, name or
//! generateName, server-set metadata, type rules, validation, then store and emit ADDED.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::endpoints::{Body, Req};
use crate::registry::ResourceType;
use crate::registry::context::State;
use crate::router::ResourceRoute;
use crate::storage::{Change, Outcome};
use crate::{api::meta, api::validation, crd, kinds};

pub(crate) fn create(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let who = super::Who::of(req, r)?;
    let w = who.opts(&req.query)?;
    let mut obj = crate::endpoints::decode_body(req)?;
    crate::registry::objects::check_type(
        &mut obj,
        &r.rt,
        &crate::registry::objects::siblings(state, &r.rt),
    )?;
    super::fields::check(&r.rt, &obj, req)?;
    let stored = create_object(state, &r.rt, r.namespace.as_deref(), obj, w)?;
    Ok(super::respond(201, &stored, &r.rt, req))
}

/// Creates `obj` (already type-checked) in `url_ns`; also used to install CRDs at start.
pub(crate) fn create_object(
    state: &Arc<State>,
    rt: &Arc<ResourceType>,
    url_ns: Option<&str>,
    mut obj: Value,
    w: super::WriteOpts<'_>,
) -> Result<Arc<Value>, ApiError> {
    let ns = identity(rt, url_ns, &mut obj)?;
    let name = meta::name(&obj).to_string();
    super::validate(rt, &mut obj)?;
    if rt.namespaced {
        super::ensure_namespace(state, rt, &ns, &name)?;
    }
    // managedFields given on create (server-side apply's first entry) are kept.
    let managed = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned();
    meta::init_create(&mut obj, rt.generation);
    if let Some(m) = managed {
        meta::set_meta(&mut obj, "managedFields", m);
    }
    kinds::normalize(rt, &mut obj, true);
    if rt.crd.is_some()
        && rt.status
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    crd::on_write(state, rt, None, &mut obj)?;
    crd::validate_custom(rt, &mut obj, w.strict)?;
    meta::normalize(&mut obj);
    if let Some(who) = &w.manager {
        let given = obj
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        crate::apply::record_update(rt, None, &mut obj, given.as_ref(), who);
    }
    let key = rt.store_key();
    let okey = crate::registry::objects::okey(rt, Some(&ns), &name);
    let out = state.store.commit(&key, &okey, w.dry_run, |cur| {
        if cur.is_some() {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        Ok(Change::Put(obj))
    })?;
    let stored = match out {
        Outcome::Created(v) | Outcome::Updated(v) | Outcome::Unchanged(v) | Outcome::Deleted(v) => {
            v
        }
    };
    if !w.dry_run {
        crd::after_write(state, rt, &stored, false);
    }
    Ok(stored)
}

/// The identity of a new object: its namespace (the URL's, which a body may only repeat; none
/// for a cluster-scoped type, returned) and its name (generated from `generateName`); a
/// create may not name a resourceVersion.
fn identity(rt: &ResourceType, url_ns: Option<&str>, obj: &mut Value) -> Result<String, ApiError> {
    let body_ns = meta::namespace(obj).to_string();
    if rt.namespaced {
        let url_ns = url_ns.unwrap_or("");
        if body_ns.is_empty() {
            meta::set_meta(obj, "namespace", json!(url_ns));
        } else if body_ns != url_ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    } else {
        meta::remove_meta(obj, "namespace");
    }
    let ns = meta::namespace(obj).to_string();
    if meta::name(obj).is_empty() {
        match meta::meta_str(obj, "generateName").filter(|g| !g.is_empty()) {
            Some(prefix) => {
                let n = validation::generate_name(prefix);
                meta::set_meta(obj, "name", json!(n));
            }
            None => {
                let cause =
                    FieldCause::required("metadata.name", "name or generateName is required");
                return Err(ApiError::invalid(&rt.group, &rt.kind, "", &[cause]));
            }
        }
    }
    if meta::meta_str(obj, "resourceVersion").is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion can not be set for Create requests",
        ));
    }
    Ok(ns)
}
