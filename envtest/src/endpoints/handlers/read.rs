//! Get and list (`k8s.io/apiserver/pkg/endpoints/handlers/get.go`). Lists honour selectors
//! (`filter`), resourceVersion / resourceVersionMatch, and pagination: a continue token carries the
//! list's resourceVersion and the last key, and every page is read from the store at that
//! resourceVersion, so the pages form one consistent snapshot.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::filter::Filter;
use crate::endpoints::router::{ResourceRoute, parse_rv, too_large};
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::storage::{ObjKey, PageQuery, parse, partial_metadata};

pub(crate) fn get(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let rt = &r.rt;
    match state.store.get(
        &rt.store_key(),
        &crate::registry::objects::okey(rt, r.namespace.as_deref(), name),
    ) {
        Some(obj) if crate::endpoints::table::wanted(req) => {
            let v = parse(&obj);
            let md = json!({"resourceVersion": crate::api::meta::meta_str(&v, "resourceVersion")});
            let t = crate::endpoints::table::columns(state, rt).table(&[v], md, true);
            Ok(endpoints::bytes(
                200,
                crate::endpoints::table::MEDIA,
                Bytes::from(t.to_string()),
            ))
        }
        Some(obj) => Ok(super::respond_bytes(200, &obj, rt, req)),
        None => Err(ApiError::not_found(&rt.group, &rt.plural, name)),
    }
}

fn encode_token(rv: u64, key: &ObjKey) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!([rv, key.0.as_str(), key.1.as_str()]).to_string())
}

fn decode_token(t: &str) -> Option<(u64, ObjKey)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .ok()?;
    let v: Value = serde_json::from_slice(&raw).ok()?;
    let a = v.as_array()?;
    Some((
        a.first()?.as_u64()?,
        crate::storage::obj_key(a.get(1)?.as_str()?, a.get(2)?.as_str()?),
    ))
}

pub(crate) fn list(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let rt = &r.rt;
    let q = &req.query;
    let filter = Filter::parse(q, rt, r.namespace.clone())?;
    let limit = q.number("limit")?.unwrap_or(0) as usize;
    let current = state.store.current_rv();
    let (at, start) = list_start(q, limit, current)?;
    let selectors = !filter.no_selectors();
    let keep = |obj: &Bytes| !selectors || filter.matches(&parse(obj));
    let query = PageQuery {
        ns: r.namespace.as_deref(),
        at,
        after: start.as_ref(),
        limit,
        count: !selectors,
    };
    let page = match state.store.list_page(&rt.store_key(), &query, &keep) {
        Ok(p) => p,
        Err(floor) => return expired(at, start.as_ref(), floor, current),
    };
    let list_rv = page.rv;
    let cont = page
        .remaining
        .and_then(|_| page.items.last())
        .map(|(k, _)| encode_token(list_rv, k));
    let remaining = page.remaining.unwrap_or(0);
    let page: Vec<(&ObjKey, &Bytes)> = page.items.iter().map(|(k, v)| (k, v)).collect();
    let mut lm = json!({"resourceVersion": list_rv.to_string()});
    if let Some(c) = cont {
        lm["continue"] = json!(c);
        if filter.no_selectors() {
            lm["remainingItemCount"] = json!(remaining);
        }
    }
    if crate::endpoints::table::wanted(req) {
        let objs: Vec<Value> = page.iter().map(|(_, o)| parse(o)).collect();
        let t = crate::endpoints::table::columns(state, rt).table(&objs, lm, true);
        return Ok(endpoints::bytes(
            200,
            crate::endpoints::table::MEDIA,
            Bytes::from(t.to_string()),
        ));
    }
    if req.protobuf() {
        return Ok(endpoints::object(
            200,
            &list_value(rt, &page, lm, req.meta_only()),
            req,
        ));
    }
    let buf = list_body(rt, &page, &lm, req.meta_only());
    Ok(endpoints::bytes(200, "application/json", Bytes::from(buf)))
}

/// Where a list reads: the resourceVersion to list at (`None`: the newest) and the key to
/// continue after, from `continue` or `resourceVersion` / `resourceVersionMatch`.
fn list_start(
    q: &crate::endpoints::router::Query,
    limit: usize,
    current: u64,
) -> Result<(Option<u64>, Option<ObjKey>), ApiError> {
    let rv = parse_rv(q)?;
    let rvm = q.value("resourceVersionMatch");
    if let Some(tok) = q.value("continue") {
        let (trv, k) = decode_token(tok)
            .ok_or_else(|| ApiError::bad_request("continue key is not valid: malformed token"))?;
        return Ok((Some(trv), Some(k)));
    }
    if rvm.is_some() && rv.is_none() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    let at = match (rv, rvm) {
        (None, _) | (Some(0), None | Some("NotOlderThan")) => None,
        (Some(n), Some("Exact")) => Some(n),
        (Some(n), None) if limit > 0 => Some(n),
        (Some(_), None | Some("NotOlderThan")) => None,
        (Some(_), Some(other)) => {
            return Err(ApiError::bad_request(format!(
                "invalid resourceVersionMatch: {other:?}"
            )));
        }
    };
    if let Some(n) = rv.filter(|n| *n > current) {
        return Err(too_large(n, current));
    }
    Ok((at, None))
}

/// The 410 of a list at a resourceVersion older than the history (`floor`): an error, or for a
/// continued list a Status carrying a fresh continue token.
fn expired(
    at: Option<u64>,
    start: Option<&ObjKey>,
    floor: u64,
    current: u64,
) -> Result<Response<Body>, ApiError> {
    let mut e = if start.is_some() {
        ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        )
    } else {
        ApiError::expired(format!(
            "too old resource version: {} ({floor})",
            at.unwrap_or(0)
        ))
    };
    e.details = None;
    if let Some(k) = start {
        let tok = encode_token(current, k);
        let mut v = e.to_value();
        v["metadata"] = json!({"continue": tok});
        return Ok(endpoints::json(410, &v));
    }
    Err(e)
}

/// A list as one value (for protobuf, which re-encodes every item anyway).
fn list_value(rt: &ResourceType, page: &[(&ObjKey, &Bytes)], lm: Value, meta_only: bool) -> Value {
    let (kind, api_version) = list_kind(rt, meta_only);
    let items: Vec<Value> = page
        .iter()
        .map(|(_, obj)| {
            let v = parse(obj);
            if meta_only {
                partial_metadata(&v)
            } else {
                crate::registry::objects::served(&v, rt).into_owned()
            }
        })
        .collect();
    json!({"kind": kind, "apiVersion": api_version, "metadata": lm, "items": items})
}

fn list_kind(rt: &ResourceType, meta_only: bool) -> (String, String) {
    if meta_only {
        (
            "PartialObjectMetadataList".to_string(),
            "meta.k8s.io/v1".to_string(),
        )
    } else {
        (rt.list_kind.clone(), rt.api_version())
    }
}

/// A list's JSON: the stored bytes of each item spliced in as they are, unless the items are
/// served rewritten (another version) or as `PartialObjectMetadata`.
fn list_body(
    rt: &ResourceType,
    page: &[(&ObjKey, &Bytes)],
    lm: &Value,
    meta_only: bool,
) -> Vec<u8> {
    let (kind, api_version) = list_kind(rt, meta_only);
    let rewrite = rt.rewrites();
    let items = match meta_only || rewrite {
        true => page.len() * 512,
        false => page.iter().map(|(_, o)| o.len() + 1).sum(),
    };
    let mut buf = Vec::with_capacity(128 + items);
    buf.extend_from_slice(
        format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            json!(kind),
            json!(api_version),
            lm
        )
        .as_bytes(),
    );
    for (i, (_, obj)) in page.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        if meta_only {
            let _ = serde_json::to_writer(&mut buf, &partial_metadata(&parse(obj)));
        } else if rewrite {
            let v = parse(obj);
            let _ = serde_json::to_writer(&mut buf, &*crate::registry::objects::served(&v, rt));
        } else {
            buf.extend_from_slice(obj);
        }
    }
    buf.extend_from_slice(b"]}");
    buf
}
