//! Delete and deletecollection (`k8s.io/apiserver/pkg/endpoints/handlers/delete.go`): the
//! DeleteOptions of the request, then the registry's delete
//! ([`registry::hooks::delete_object`](crate::registry::hooks::delete_object): preconditions,
//! propagation-policy finalizers, marking an object with finalizers as deleting or removing it; the
//! controllers react to it, e.g. a CRD's deletion cleans up its custom resources).

use std::sync::Arc;

use http::Response;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde::Deserialize;
use serde_json::json;

use crate::api::meta;
use crate::api::status::{self, ApiError};
use crate::api::validation::FieldCause;
use crate::endpoints::State;
use crate::endpoints::filter::Filter;
use crate::endpoints::router::{Query, ResourceRoute};
use crate::endpoints::{self, Body, Req};
use crate::registry::hooks::delete_object;
use crate::registry::rest::DeleteOpts;

/// Decodes the request's DeleteOptions strictly, as upstream's handler does: the query
/// parameters and the body are each decoded into the typed `meta/v1` `DeleteOptions`
/// (k8s-openapi's), so a value of the wrong JSON type (`"dryRun":"All"`,
/// `"preconditions":{"uid":1}`, a body that is not an object, `gracePeriodSeconds=abc`) is a
/// 400 and nothing is deleted. Body fields override query fields; then
/// upstream's `ValidateDeleteOptions` rules apply (422).
pub(crate) fn options(req: &Req) -> Result<DeleteOpts, ApiError> {
    let mut typed = from_query(&req.query)?;
    if !req.body.iter().all(u8::is_ascii_whitespace) {
        let body = from_body(&req.body, req.media_type())?;
        typed = DeleteOptions {
            dry_run: body.dry_run.or(typed.dry_run),
            grace_period_seconds: body.grace_period_seconds.or(typed.grace_period_seconds),
            orphan_dependents: body.orphan_dependents.or(typed.orphan_dependents),
            propagation_policy: body.propagation_policy.or(typed.propagation_policy),
            preconditions: body.preconditions,
            ..body
        };
    }
    validate(typed)
}

/// The body: a `DeleteOptions` object (kind `DeleteOptions` or none), JSON or, as client-go
/// sends it for built-in kinds, protobuf (`api::protobuf`).
fn from_body(body: &[u8], media: &str) -> Result<DeleteOptions, ApiError> {
    let decoded = if media == crate::api::protobuf::MEDIA {
        DeleteOptions::deserialize(&crate::api::protobuf::decode(body)?)
    } else {
        if let Some(c) = too_deep(body, MAX_NESTING_DEPTH) {
            return Err(ApiError::bad_request(format!(
                "error decoding DeleteOptions: invalid character '{}' exceeded max depth",
                c as char
            )));
        }
        serde_json::from_slice(body)
    };
    let o: DeleteOptions =
        decoded.map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    match o.kind.as_deref() {
        None | Some("" | "DeleteOptions") => Ok(o),
        Some(k) => Err(ApiError::bad_request(format!(
            "decoded object of kind {k:?} cannot be converted to DeleteOptions"
        ))),
    }
}

/// Go's JSON decoder refuses documents nested deeper than this (`encoding/json`'s
/// `maxNestingDepth`, kept by `sigs.k8s.io/json`, which kube-apiserver decodes with).
const MAX_NESTING_DEPTH: usize = 10_000;

/// The bracket that opens level `max + 1` of a JSON text, if it nests that deep. serde skips
/// the unknown fields of a typed body without a depth limit, so a DeleteOptions body with a
/// deep unknown field would otherwise decode (and delete) where kube-apiserver answers 400.
fn too_deep(body: &[u8], max: usize) -> Option<u8> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for &c in body {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return Some(c);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The query parameters of DeleteOptions (upstream's parameter codec; preconditions are
/// body-only).
fn from_query(q: &Query) -> Result<DeleteOptions, ApiError> {
    let grace = match q.get("gracePeriodSeconds") {
        None => None,
        Some(v) => Some(v.parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!("invalid value for gracePeriodSeconds: {v:?}"))
        })?),
    };
    let orphan = q
        .get("orphanDependents")
        .map(|_| q.flag("orphanDependents"));
    Ok(DeleteOptions {
        dry_run: q.value("dryRun").map(|v| vec![v.to_string()]),
        grace_period_seconds: grace,
        orphan_dependents: orphan,
        propagation_policy: q.value("propagationPolicy").map(String::from),
        ..Default::default()
    })
}

/// Upstream's `ValidateDeleteOptions`: known dryRun values (400 as for writes), a known
/// propagationPolicy and not both it and orphanDependents (422).
fn validate(o: DeleteOptions) -> Result<DeleteOpts, ApiError> {
    let dry = o.dry_run.unwrap_or_default();
    if let Some(v) = dry.iter().find(|v| *v != "All") {
        return Err(ApiError::bad_request(format!(
            "Invalid dryRun value {v:?}: supported values: \"All\""
        )));
    }
    let bad = |c: FieldCause| Err(ApiError::invalid("meta.k8s.io", "DeleteOptions", "", &[c]));
    let mut policy = o.propagation_policy;
    if let Some(p) = &policy {
        if !["Orphan", "Background", "Foreground"].contains(&p.as_str()) {
            return bad(FieldCause::not_supported(
                "propagationPolicy",
                &json!(p),
                &[json!("Foreground"), json!("Background"), json!("Orphan")],
            ));
        }
        if o.orphan_dependents.is_some() {
            return bad(FieldCause::invalid(
                "propagationPolicy",
                &json!(p),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
    } else if o.orphan_dependents == Some(true) {
        policy = Some("Orphan".into());
    }
    let pre = o.preconditions.unwrap_or_default();
    Ok(DeleteOpts {
        dry_run: !dry.is_empty(),
        uid: pre.uid,
        resource_version: pre.resource_version,
        policy,
        grace: o.grace_period_seconds,
    })
}

/// A DELETE of one object: the Status of its removal, or the object itself when it is still
/// there (finalizers, graceful deletion) or its resource returns deleted objects
/// (`registry::builtins::returns_deleted_object`, upstream's `ReturnDeletedObject`).
pub(crate) fn delete(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let opts = options(req)?;
    let (obj, removed) = delete_object(state, &r.rt, r.namespace.as_deref(), name, &opts)?;
    if removed && !crate::registry::builtins::returns_deleted_object(&r.rt) {
        let uid = meta::meta_str(&obj.obj, "uid").unwrap_or("");
        return Ok(endpoints::object(
            200,
            &status::success(&r.rt.group, &r.rt.plural, name, uid),
            req,
        ));
    }
    Ok(super::respond_committed(200, &obj, &r.rt, req))
}

pub(crate) fn delete_collection(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let opts = options(req)?;
    let rt = &r.rt;
    let filter = Filter::parse(&req.query, rt, r.namespace.clone())?;
    let (_, items) = state
        .store
        .list(&rt.store_key(), r.namespace.as_deref(), None)
        .map_err(|_| ApiError::internal("list failed"))?;
    let mut out = Vec::new();
    for ((ns, name), bytes) in &items {
        if !filter.no_selectors() && !filter.matches(&crate::storage::parse(bytes)) {
            continue;
        }
        match delete_object(state, rt, Some(ns), name, &opts) {
            Ok((v, _)) => out.push(crate::registry::objects::served(&v.obj, rt).into_owned()),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": rt.list_kind, "apiVersion": rt.api_version(),
        "metadata": {"resourceVersion": state.store.current_rv().to_string()}, "items": out,
    });
    Ok(endpoints::object(200, &list, req))
}
