//! Delete and deletecollection (spec §1.6.5–1.6.6): preconditions, propagation-policy
//! finalizers, marking an object with finalizers as deleting (deletionTimestamp, generation+1)
//! or removing it; a CRD's deletion then cleans up its custom resources (`crd`).

use std::sync::Arc;

use http::Response;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde_json::{Value, json};

use crate::api::status::{self, ApiError};
use crate::api::validation::FieldCause;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::registry::context::State;
use crate::router::{Query, ResourceRoute};
use crate::storage::{Change, Outcome};
use crate::{api::meta, crd, filter::Filter};

/// DeleteOptions from the body and the query, as the verbs act on them.
#[derive(Debug, Default, Clone)]
pub(crate) struct DeleteOpts {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub policy: Option<String>,
    /// `gracePeriodSeconds` (only simulated Pods use it: `crate::kubelet`).
    pub grace: Option<i64>,
}

/// Decodes the request's DeleteOptions strictly, as upstream's handler does: the query
/// parameters and the body are each decoded into the typed `meta/v1` `DeleteOptions`
/// (k8s-openapi's), so a value of the wrong JSON type (`"dryRun":"All"`,
/// `"preconditions":{"uid":1}`, a body that is not an object, `gracePeriodSeconds=abc`) is a
/// 400 and nothing is deleted. Body fields override query fields; then
/// upstream's `ValidateDeleteOptions` rules apply (422).
pub(crate) fn options(req: &Req) -> Result<DeleteOpts, ApiError> {
    let mut typed = from_query(&req.query)?;
    if !req.body.iter().all(u8::is_ascii_whitespace) {
        let body = from_body(&req.body)?;
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

/// The body: a JSON `DeleteOptions` object (kind `DeleteOptions` or none).
fn from_body(body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let o: DeleteOptions = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    match o.kind.as_deref() {
        None | Some("" | "DeleteOptions") => Ok(o),
        Some(k) => Err(ApiError::bad_request(format!(
            "decoded object of kind {k:?} cannot be converted to DeleteOptions"
        ))),
    }
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
    let orphan = match q.get("orphanDependents") {
        None => None,
        Some(_) => Some(q.flag("orphanDependents")?),
    };
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

pub(crate) fn delete(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let opts = options(req)?;
    let (obj, removed) = delete_object(state, &r.rt, r.namespace.as_deref(), name, &opts)?;
    if removed {
        let uid = meta::meta_str(&obj, "uid").unwrap_or("");
        return Ok(endpoints::json(
            200,
            &status::success(&r.rt.group, &r.rt.plural, name, uid),
        ));
    }
    Ok(super::respond(200, &obj, &r.rt, req))
}

/// Deletes or marks one object; returns it and whether it is gone.
pub(crate) fn delete_object(
    state: &Arc<State>,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOpts,
) -> Result<(Arc<Value>, bool), ApiError> {
    let key = rt.store_key();
    let okey = crate::registry::objects::okey(rt, ns, name);
    let out = state.store.commit(&key, &okey, opts.dry_run, |cur| {
        let Some(cur) = cur else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let uid = meta::meta_str(cur, "uid").unwrap_or("");
        if let Some(want) = opts.uid.as_deref().filter(|u| *u != uid) {
            return Err(ApiError::new(409, "Conflict", format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}")));
        }
        let rv = meta::meta_str(cur, "resourceVersion").unwrap_or("");
        if let Some(want) = opts.resource_version.as_deref().filter(|r| *r != rv) {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"),
            ));
        }
        let mut new = cur.clone();
        let mut fins = meta::finalizers(&new);
        let extra = match opts.policy.as_deref() {
            Some("Orphan") => Some("orphan"),
            Some("Foreground") => Some("foregroundDeletion"),
            _ => None,
        };
        if let Some(f) = extra
            && !fins.iter().any(|x| x == f) {
                fins.push(f.to_string());
                meta::set_meta(&mut new, "finalizers", json!(fins));
            }
        if let Some(change) = crate::kubelet::graceful_delete(state, rt, cur, &new, opts.grace) {
            return Ok(change);
        }
        let is_ns = super::update::namespace_finalizers(rt, &new);
        if fins.is_empty() && !is_ns {
            return Ok(Change::Remove);
        }
        if meta::meta_str(&new, "deletionTimestamp").is_none() {
            meta::set_meta(&mut new, "deletionTimestamp", json!(meta::now()));
            meta::set_meta(&mut new, "deletionGracePeriodSeconds", json!(0));
            if rt.generation {
                meta::set_meta(&mut new, "generation", json!(meta::generation(cur) + 1));
            }
        }
        if crd::is_crd_type(rt) {
            crd::mark_terminating(&mut new);
        }
        if rt.group.is_empty() && rt.plural == "namespaces" {
            new["status"] = json!({"phase": "Terminating"});
        }
        Ok(Change::Put(new))
    })?;
    let (obj, removed) = match out {
        Outcome::Deleted(v) => (v, true),
        Outcome::Created(v) | Outcome::Updated(v) | Outcome::Unchanged(v) => (v, false),
    };
    if !opts.dry_run {
        crd::after_write(state, rt, &obj, removed);
        if !removed {
            crd::after_delete_marked(state, rt, &obj);
        }
        crate::gc::after_write(state, rt, &obj, removed);
    }
    Ok((obj, removed))
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
            Ok((v, _)) => out.push(crate::registry::objects::served(&v, rt).into_owned()),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": rt.list_kind, "apiVersion": rt.api_version(),
        "metadata": {"resourceVersion": state.store.current_rv().to_string()}, "items": out,
    });
    Ok(endpoints::json(200, &list))
}
