//! The resource handlers: [`dispatch`] picks one from the method and the route (collection or item,
//! subresource) — `read` (get, list), `create`, `update` (PUT and PATCH), `delete` (delete,
//! deletecollection), `scale` (the `/scale` subresource), `eviction` (`pods/eviction`), `apply`
//! (server-side apply), `watch`, `review` (the create-only review resources and
//! `serviceaccounts/token`, answered by `auth`); `versioned` wraps it to serve custom resources at
//! a non-storage version. Writes go through admission first (`admit`), then through the registry's
//! generic write path ([`registry::rest`](crate::registry::rest)); `fields` checks bodies by
//! `?fieldValidation=`. The helpers here build write options from the query and render stored
//! objects at the served version.

pub(crate) mod admit;
pub(crate) mod apply;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod eviction;
pub(crate) mod fields;
pub(crate) mod read;
pub(crate) mod review;
pub(crate) mod scale;
pub(crate) mod update;
pub(crate) mod versioned;
pub(crate) mod watch;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::router::{Query, ResourceRoute};
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::registry::rest::WriteOpts;
use crate::storage::{Committed, partial_metadata};

/// Serves one resource request at the type it routed to.
pub(crate) async fn dispatch(
    state: &Arc<State>,
    r: ResourceRoute,
    req: Req,
) -> Result<Response<Body>, ApiError> {
    let rt = r.rt.clone();
    if let Some(sub) = r.sub.as_deref()
        && let Some(resp) = subresource(state, &r, sub, &req)
    {
        return resp;
    }
    if crate::registry::builtins::read_only(&rt) && req.method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    if rt.virtual_create {
        return match (&req.method, &r.name) {
            (&Method::POST, None) => review::review(state, &r, &req),
            _ => Err(ApiError::method_not_allowed()),
        };
    }
    // Admission webhooks (`crate::admission`) review the write first; a mutated object is
    // written instead of the body or patch.
    let mutated = admit::request(state, &r, &req).await?;
    let all_namespaces = rt.namespaced && r.namespace.is_none();
    match (&req.method, r.name.as_deref()) {
        (&Method::GET, None) => {
            if r.watch_prefix || req.query.flag("watch") {
                watch::serve(state, &r, &req)
            } else {
                read::list(state, &r, &req)
            }
        }
        (&Method::POST, None) if !all_namespaces => create::create(state, &r, &req, mutated),
        (&Method::DELETE, None) if !all_namespaces && rt.verbs().contains(&"deletecollection") => {
            delete::delete_collection(state, &r, &req)
        }
        (&Method::GET, Some(name)) => read::get(state, &r, name, &req),
        (&Method::PUT, Some(name)) => update::put(state, &r, name, &req, mutated),
        // Boxed, as admission's webhook calls in it are (`admit`).
        (&Method::PATCH, Some(name)) if is_apply(&req) => {
            Box::pin(apply::patch(state, &r, name, &req)).await
        }
        (&Method::PATCH, Some(name)) => match mutated {
            Some(obj) => update::put(state, &r, name, &req, Some(obj)),
            None => update::patch(state, &r, name, &req),
        },
        (&Method::DELETE, Some(name)) if r.sub.is_none() => delete::delete(state, &r, name, &req),
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The subresources served by their own handlers (`/scale`, `/eviction`, `/token`), or an error for
/// one the type does not have ([`ResourceType::subresources`]); `None` for `/status` (served by the
/// ordinary verbs).
fn subresource(
    state: &Arc<State>,
    r: &ResourceRoute,
    sub: &str,
    req: &Req,
) -> Option<Result<Response<Body>, ApiError>> {
    if !r.rt.subresources().any(|s| s.name == sub) {
        return Some(Err(ApiError::unknown_path()));
    }
    let name = r.name.as_deref();
    match (sub, name) {
        ("scale", Some(name)) => Some(scale::handle(state, r, name, req)),
        ("eviction", Some(name)) => Some(eviction::handle(state, r, name, req)),
        ("token", Some(name)) => Some(review::token_request(state, r, name, req)),
        ("scale" | "eviction" | "token", None) => Some(Err(ApiError::unknown_path())),
        _ => None,
    }
}

/// Whether a PATCH is a server-side apply.
pub(crate) fn is_apply(req: &Req) -> bool {
    req.header(http::header::CONTENT_TYPE)
        .split(';')
        .next()
        .map(str::trim)
        == Some("application/apply-patch+yaml")
}

/// The field manager of a client's non-apply write and the apiVersion and subresource it
/// wrote at (see `WriteOpts::manager`).
pub(crate) struct Who {
    manager: String,
    api_version: String,
    sub: Option<String>,
}

impl Who {
    /// `?fieldManager=` (at most 128 characters, else 422), else the User-Agent before its
    /// first `/` (printable characters, at most 128 bytes: upstream's `prefixFromUserAgent`),
    /// else `unknown` (upstream's name when both are empty; kube sends no User-Agent).
    pub fn of(req: &Req, r: &ResourceRoute) -> Result<Who, ApiError> {
        let manager = match req.query.value("fieldManager") {
            Some(m) if m.chars().count() > 128 => {
                let c = crate::api::validation::FieldCause::invalid(
                    "fieldManager",
                    &json!(m),
                    "must be no more than 128 characters",
                );
                return Err(ApiError::invalid("meta.k8s.io", "UpdateOptions", "", &[c]));
            }
            Some(m) if !m.is_empty() => m.to_string(),
            _ => {
                let ua = req.header(http::header::USER_AGENT);
                let mut out = String::new();
                for c in ua.split('/').next().unwrap_or("").chars() {
                    if c.is_control() {
                        continue;
                    }
                    if out.len() + c.len_utf8() > 128 {
                        break;
                    }
                    out.push(c);
                }
                if out.is_empty() {
                    "unknown".to_string()
                } else {
                    out
                }
            }
        };
        Ok(Who {
            manager,
            api_version: r.rt.api_version(),
            sub: r.sub.clone(),
        })
    }

    /// The options of the write: the query's, made by this manager.
    pub fn opts(&self, q: &Query) -> Result<WriteOpts<'_>, ApiError> {
        Ok(WriteOpts {
            manager: Some(crate::registry::fieldmanager::Writer {
                manager: &self.manager,
                api_version: &self.api_version,
                subresource: self.sub.as_deref(),
            }),
            ..write_opts(q)?
        })
    }
}

/// The object a POST or PUT writes: `admitted` (what admission made of the request), else the
/// request's body; type-checked, and its fields checked by `?fieldValidation=`.
pub(crate) fn body(
    state: &State,
    r: &ResourceRoute,
    req: &Req,
    admitted: Option<Value>,
) -> Result<Value, ApiError> {
    let (mut obj, duplicates) = match admitted {
        Some(obj) => (obj, None),
        None => {
            let (obj, dups) = endpoints::decode_body_noting_duplicates(req)?;
            (obj, Some(dups))
        }
    };
    crate::registry::objects::check_type(&mut obj, &r.rt, Some(&state.registry))?;
    match duplicates {
        Some(dups) => fields::check_decoded(&r.rt, &obj, req, dups)?,
        None => fields::check_object(&r.rt, &obj, req)?,
    }
    if state.settings.stamp_traceparent {
        stamp_traceparent(&mut obj, req);
    }
    Ok(obj)
}

/// Writes the request's `traceparent` header on `obj` as KEP-5915's annotation
/// `tracing.k8s.io/traceparent` (when the server was started with `stamp_traceparent`).
fn stamp_traceparent(obj: &mut Value, req: &Req) {
    let Some(tp) = req.headers.get("traceparent").and_then(|v| v.to_str().ok()) else {
        return;
    };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(
            "tracing.k8s.io/traceparent".into(),
            Value::String(tp.into()),
        );
    }
}

/// The options of a write by the server's own rules: `dryRun` and `fieldValidation` from the
/// query, no field manager.
pub(crate) fn write_opts(q: &Query) -> Result<WriteOpts<'static>, ApiError> {
    let strict = match q.value("fieldValidation") {
        None | Some("Ignore") | Some("Warn") => false,
        Some("Strict") => true,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {v:?}"
            )));
        }
    };
    Ok(WriteOpts {
        dry_run: q.dry_run()?,
        strict,
        manager: None,
        user: None,
    })
}

/// An object response (full, or PartialObjectMetadata when asked for).
pub(crate) fn respond(code: u16, obj: &Arc<Value>, rt: &ResourceType, req: &Req) -> Response<Body> {
    if req.meta_only() {
        return endpoints::object(code, &partial_metadata(obj), req);
    }
    let v = crate::registry::objects::served(obj, rt);
    if req.protobuf() {
        return endpoints::object(code, &v, req);
    }
    endpoints::bytes(
        code,
        "application/json",
        Bytes::from(serde_json::to_vec(&*v).unwrap_or_default()),
    )
}

/// A written object as a response: from the bytes the write stored when it stored them and they
/// need no reshaping (the same bytes `respond` would serialize), else as [`respond`].
pub(crate) fn respond_committed(
    code: u16,
    c: &Committed,
    rt: &ResourceType,
    req: &Req,
) -> Response<Body> {
    match &c.bytes {
        Some(b) if as_stored(rt, req) => endpoints::bytes(code, "application/json", b.clone()),
        _ => respond(code, &c.obj, rt, req),
    }
}

/// Whether the answer is the stored JSON as it is (not metadata only, not at another version or
/// view, not protobuf).
fn as_stored(rt: &ResourceType, req: &Req) -> bool {
    !(req.meta_only() || rt.rewrites() || req.protobuf())
}

/// A stored object's bytes as a response (parsed only when it must be reshaped).
pub(crate) fn respond_bytes(
    code: u16,
    obj: &Bytes,
    rt: &ResourceType,
    req: &Req,
) -> Response<Body> {
    if !as_stored(rt, req) {
        return respond(code, &Arc::new(crate::storage::parse(obj)), rt, req);
    }
    endpoints::bytes(code, "application/json", obj.clone())
}
