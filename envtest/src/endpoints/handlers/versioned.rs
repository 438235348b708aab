//! Serving a custom resource at a version other than its storage version (called by `server` for
//! every resource request, around [`super::dispatch`]). A custom resource whose CRD converts
//! through a webhook, requested at a version other than its storage version, is served by the
//! handlers at the storage-version type: the request body is pruned, defaulted and validated
//! against the requested version's schema and converted to the storage version on the way in, and
//! what comes back (an object, a list in one review, each chunk of watch events) is converted to
//! the requested version on the way out
//! ([`registry::conversion::review`](crate::registry::conversion::review) makes the calls). A JSON
//! or merge patch is applied to the object converted to the requested version, converted back and
//! written as an update pinned to the resourceVersion it was computed from (retried on a conflict).
//! Everything else goes straight to the handlers.
//!
//! Admission runs at the storage version (`requestKind` still names the version asked for).
//! Limits: server-side apply and `/scale` at a non-storage version go to the storage version
//! unconverted (their field paths must mean the same in both versions); `as=Table` columns are
//! computed from the storage version; requests at the storage version are not converted, so
//! objects written before the CRD's storage version changed are served as they were stored.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Method, Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{self as verbs, admit, write_opts};
use crate::admission::Op;
use crate::api::meta;
use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::registry::conversion::{Conversion, review};
use crate::registry::crd;

/// How often a patch at a non-storage version is retried when the object changed meanwhile.
const PATCH_ATTEMPTS: usize = 5;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Serves a resource request, converting through the CRD's webhook when it must.
pub(crate) async fn dispatch(
    state: &Arc<State>,
    r: ResourceRoute,
    req: Req,
) -> Result<Response<Body>, ApiError> {
    let conv = match state.registry.snapshot().conversion(&r.rt) {
        Some(c) if c.storage.version != r.rt.version && r.sub.as_deref() != Some("scale") => {
            c.clone()
        }
        _ => return verbs::dispatch(state, r, req).await,
    };
    // Boxed: the conversion's webhook calls would otherwise make every request's future (moved
    // by the connection on each request) as large as theirs.
    Box::pin(converted(state, r, req, conv)).await
}

/// Serves a resource request at its CRD's storage version, converting through the CRD's webhook.
async fn converted(
    state: &Arc<State>,
    r: ResourceRoute,
    req: Req,
    conv: Arc<Conversion>,
) -> Result<Response<Body>, ApiError> {
    let served = r.rt.clone();
    let mut req = req;
    req.served_as = Some(served.clone());
    let storage = ResourceRoute {
        rt: conv.storage.clone(),
        ..r.clone()
    };
    let watching = req.method == Method::GET
        && r.name.is_none()
        && (r.watch_prefix || req.query.flag("watch"));
    let resp = match (&req.method, r.name.is_some()) {
        (&Method::POST, false) | (&Method::PUT, true) if writable(&storage) => {
            match body_to_storage(&conv, &served, &req).await? {
                Some(obj) => write(state, &storage, &req, obj).await?,
                None => verbs::dispatch(state, storage, req).await?,
            }
        }
        (&Method::PATCH, true) => patch(state, &conv, &served, storage, req).await?,
        _ => verbs::dispatch(state, storage, req).await?,
    };
    if watching {
        Ok(watch_back(conv, served, resp))
    } else {
        back(&conv, &served, resp).await
    }
}

/// Whether a POST or PUT of `r` reaches the create or update handler (else the handlers answer
/// it: a subresource the type lacks, a create across all namespaces).
fn writable(r: &ResourceRoute) -> bool {
    match r.sub.as_deref() {
        None => r.name.is_some() || !r.rt.namespaced || r.namespace.is_some(),
        Some(sub) => sub == "status" && r.rt.status && r.name.is_some(),
    }
}

/// A POST/PUT body at the served version: pruned, defaulted and validated against that
/// version's schema, then converted to the storage version. `None` when the body names another
/// kind or group (the handlers answer that).
async fn body_to_storage(
    conv: &Conversion,
    served: &ResourceType,
    req: &Req,
) -> Result<Option<Value>, ApiError> {
    let mut obj = crate::endpoints::decode_body(req)?;
    let (av, kind) = (s(&obj, "apiVersion"), s(&obj, "kind"));
    if !kind.is_empty() && kind != served.kind {
        return Ok(None);
    }
    if av.is_empty() || av == served.api_version() {
        obj["apiVersion"] = json!(served.api_version());
        obj["kind"] = json!(served.kind);
        let strict = write_opts(&req.query)?.strict;
        crd::validate_custom(served, &mut obj, None, strict, false)?;
    } else if !av.starts_with(&format!("{}/", served.group)) {
        return Ok(None);
    }
    review::convert_one(conv, obj, &conv.storage.api_version())
        .await
        .map(Some)
}

/// Writes `obj` (at the storage version) through admission and the create (no name) or update
/// handler of `storage`, as a POST or PUT of it would be.
async fn write(
    state: &Arc<State>,
    storage: &ResourceRoute,
    req: &Req,
    obj: Value,
) -> Result<Response<Body>, ApiError> {
    let op = match storage.name {
        None => Op::Create,
        Some(_) => Op::Update,
    };
    let given = obj.clone();
    let admitted = admit::object(state, storage, req, op, |_| Ok(Some(given))).await?;
    let obj = admitted.unwrap_or(obj);
    match storage.name.as_deref() {
        Some(name) => verbs::update::put(state, storage, name, req, Some(obj)),
        None => verbs::create::create(state, storage, req, Some(obj)),
    }
}

/// A JSON or merge patch at the served version: applied to the stored object converted to
/// that version, converted back and written as an update pinned to the resourceVersion it
/// was computed from — retried on a conflict unless the patch set a resourceVersion itself.
/// Other patch types go to the storage version unconverted.
async fn patch(
    state: &Arc<State>,
    conv: &Conversion,
    served: &ResourceType,
    storage: ResourceRoute,
    req: Req,
) -> Result<Response<Body>, ApiError> {
    let ct = req.media_type().to_string();
    let Some(name) = storage.name.clone().filter(|_| {
        matches!(
            ct.as_str(),
            "application/json-patch+json" | "application/merge-patch+json"
        )
    }) else {
        return verbs::dispatch(state, storage, req).await;
    };
    let strict = write_opts(&req.query)?.strict;
    let okey = crate::registry::objects::okey(&storage.rt, storage.namespace.as_deref(), &name);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(cur) = state.store.get_value(&storage.rt.store_key(), &okey) else {
            return verbs::dispatch(state, storage, req).await; // the verbs answer 404
        };
        let cur_rv = meta::meta_str(&cur, "resourceVersion")
            .unwrap_or("")
            .to_string();
        let cur = review::convert_one(conv, cur, &served.api_version()).await?;
        let mut new = admit::apply_patch(Some(&cur), &storage.rt, &ct, &req.body)?;
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        if meta::meta_str(&new, "resourceVersion").is_none_or(str::is_empty) {
            meta::set_meta(&mut new, "resourceVersion", json!(cur_rv));
        }
        let pinned_by_client = meta::meta_str(&new, "resourceVersion") != Some(cur_rv.as_str());
        let status_write = storage.sub.as_deref() == Some("status");
        crd::validate_custom(served, &mut new, Some(&cur), strict, status_write)?;
        let new = review::convert_one(conv, new, &conv.storage.api_version()).await?;
        match write(state, &storage, &req, new).await {
            Err(e) if e.code == 409 && !pinned_by_client && attempt < PATCH_ATTEMPTS => {
                tracing::debug!(crd = %conv.crd, name = %name, attempt, "patch at a non-storage version conflicted; retrying");
            }
            other => return other,
        }
    }
}

/// A successful JSON answer at the storage version (object or list) converted back.
async fn back(
    conv: &Conversion,
    served: &ResourceType,
    resp: Response<Body>,
) -> Result<Response<Body>, ApiError> {
    let json_body = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !resp.status().is_success() || !json_body {
        return Ok(resp);
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    let storage_av = conv.storage.api_version();
    let target = served.api_version();
    let mut v: Value = match serde_json::from_slice(&bytes) {
        Ok(v) if s(&v, "apiVersion") == storage_av => v,
        _ => return Ok(Response::from_parts(parts, Full::new(bytes).boxed())),
    };
    if s(&v, "kind") == served.kind {
        v = review::convert_one(conv, v, &target).await?;
    } else if s(&v, "kind") == served.list_kind {
        let items = match v.get_mut("items").map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let what = format!("{storage_av}, Kind={}", served.list_kind);
        v["items"] = Value::Array(review::convert(conv, items, &target, &what).await?);
        v["apiVersion"] = json!(target);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    let out = Bytes::from(serde_json::to_vec(&v).map_err(ApiError::internal)?);
    Ok(Response::from_parts(parts, Full::new(out).boxed()))
}

/// A watch stream whose events are converted back chunk by chunk (one review per chunk); a
/// failed conversion ends the stream with an `ERROR` event carrying the 500 `Status`.
fn watch_back(
    conv: Arc<Conversion>,
    served: Arc<ResourceType>,
    resp: Response<Body>,
) -> Response<Body> {
    if !resp.status().is_success() {
        return resp;
    }
    let (parts, mut body) = resp.into_parts();
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    crate::task::spawn(async move {
        let mut pending = BytesMut::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            let Some(end) = pending.iter().rposition(|b| *b == b'\n') else {
                continue;
            };
            let lines = pending.split_to(end + 1).freeze();
            let out = match events(&conv, &served, &lines).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(crd = %conv.crd, error = %e.message, "watch event conversion failed; ending the watch");
                    let _ = tx
                        .send(crate::storage::encode_line("ERROR", &e.to_value()))
                        .await;
                    return;
                }
            };
            if tx.send(out).await.is_err() {
                return;
            }
        }
    });
    Response::from_parts(parts, endpoints::stream("", rx).into_body())
}

/// Newline-delimited watch events with their objects converted back.
async fn events(
    conv: &Conversion,
    served: &ResourceType,
    lines: &Bytes,
) -> Result<Bytes, ApiError> {
    let storage_av = conv.storage.api_version();
    let target = served.api_version();
    let mut evs = Vec::new();
    for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => evs.push(v),
            Err(_) => return Ok(lines.clone()),
        }
    }
    let mut at = Vec::new();
    let mut objects = Vec::new();
    for (i, ev) in evs.iter_mut().enumerate() {
        let bookmark = s(ev, "type") == "BOOKMARK";
        let obj = &mut ev["object"];
        if s(obj, "apiVersion") != storage_av || s(obj, "kind") != served.kind {
            continue;
        }
        if bookmark {
            obj["apiVersion"] = json!(target);
        } else {
            at.push(i);
            objects.push(obj.take());
        }
    }
    if !objects.is_empty() {
        let what = format!("{storage_av}, Kind={}", served.kind);
        let converted = review::convert(conv, objects, &target, &what).await?;
        for (i, obj) in at.into_iter().zip(converted) {
            evs[i]["object"] = obj;
        }
    }
    let mut out = BytesMut::with_capacity(lines.len());
    for ev in &evs {
        out.extend_from_slice(&serde_json::to_vec(ev).map_err(ApiError::internal)?);
        out.extend_from_slice(b"\n");
    }
    Ok(out.freeze())
}
