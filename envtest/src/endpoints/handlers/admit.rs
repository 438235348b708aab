//! The admission step of the write handlers: for a create, update (PUT or PATCH) or delete that
//! a webhook's rules match ([`admission::matching`]), the old object (stored, as served) and the
//! new one (the decoded body, or the patch applied to the old one) go to `admission`; what a
//! mutating webhook returns is handed back to the handler as the object to write, pinned to the
//! resourceVersion it was computed from, so a concurrent write makes it a 409. Bound
//! ValidatingAdmissionPolicies ([`admission::policy`]) then see the final object. The request
//! itself is never rewritten. Server-side apply reviews its computed result through [`object`].

use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};

use super::is_apply;
use crate::admission::{self, Attributes, Op};
use crate::api::meta;
use crate::api::patch::{Patch, Target};
use crate::api::status::ApiError;
use crate::endpoints::Req;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::registry::ResourceType;

/// Admission of a write request: `Some` with the object a mutating webhook produced (to be
/// written instead of the request's body or patch), `None` when nothing changed it (or nothing
/// reviews it, or the object to update or delete does not exist: the handler answers that).
pub(crate) async fn request(
    state: &State,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Option<Value>, ApiError> {
    let Some(op) = op_of(&req.method, r, req) else {
        return Ok(None);
    };
    let patch = req.method == Method::PATCH;
    object(state, r, req, op, |old| match op {
        Op::Delete => Ok(None),
        _ if patch => Ok(Some(apply_patch(old, &r.rt, req.media_type(), &req.body)?)),
        _ => Ok(Some(crate::endpoints::decode_body(req)?)),
    })
    .await
}

/// Admission of `op` on the object of `r`: `make` builds the new object from the old one (none
/// for a create). See [`request`] for the answer.
pub(crate) async fn object(
    state: &State,
    r: &ResourceRoute,
    req: &Req,
    op: Op,
    make: impl FnOnce(Option<&Value>) -> Result<Option<Value>, ApiError>,
) -> Result<Option<Value>, ApiError> {
    let rt = &r.rt;
    let hooks = admission::matching(state, &state.admission, rt, r.sub.as_deref(), op);
    if hooks.is_none() && !admission::policy::any_bound(&state.admission, rt) {
        return Ok(None);
    }
    let dry_run = req.query.dry_run()?;
    let old = match (op, r.name.as_deref()) {
        (Op::Create, _) | (_, None) => None,
        (_, Some(name)) => match stored(state, rt, r.namespace.as_deref(), name) {
            Some(v) => Some(v),
            None => return Ok(None),
        },
    };
    let mut new = make(old.as_ref())?;
    if let (Some(n), Some(ns)) = (new.as_mut(), r.namespace.as_deref())
        && rt.namespaced
        && meta::namespace(n).is_empty()
    {
        meta::set_meta(n, "namespace", json!(ns));
    }
    let name = r
        .name
        .clone()
        .or_else(|| new.as_ref().map(|n| meta::name(n).to_string()))
        .unwrap_or_default();
    let user = req.user.to_value();
    let attrs = Attributes {
        op,
        rt,
        requested: req.served_as.as_ref().unwrap_or(rt),
        namespace: r.namespace.as_deref(),
        name: &name,
        sub: r.sub.as_deref(),
        dry_run,
        old: old.as_ref(),
        warnings: &req.warnings,
        user: &user,
    };
    let mutated = match hooks {
        // Boxed: the webhook calls' future is kept out of every write's (see `versioned`).
        Some(hooks) => Box::pin(hooks.admit(state, &attrs, new.clone())).await?,
        None => None,
    };
    admission::policy::admit(
        state,
        &state.admission,
        &attrs,
        mutated.as_ref().or(new.as_ref()),
    )?;
    Ok(mutated.map(|n| pinned(n, old.as_ref())))
}

/// The stored object `name` as served at `rt`.
fn stored(state: &State, rt: &Arc<ResourceType>, ns: Option<&str>, name: &str) -> Option<Value> {
    let okey = crate::registry::objects::okey(rt, ns, name);
    let v = state.store.get_value(&rt.store_key(), &okey)?;
    Some(crate::registry::objects::served(&v, rt).into_owned())
}

/// The admission operation of a request, or `None` when admission does not review it
/// (reads, subresource creates and deletes, server-side apply — `apply` admits that itself).
fn op_of(method: &Method, r: &ResourceRoute, req: &Req) -> Option<Op> {
    Some(match (method, r.name.as_deref()) {
        (&Method::POST, None) if r.sub.is_none() => Op::Create,
        (&Method::PUT, Some(_)) => Op::Update,
        (&Method::PATCH, Some(_)) if !is_apply(req) => Op::Update,
        (&Method::DELETE, Some(_)) if r.sub.is_none() => Op::Delete,
        _ => return None,
    })
}

/// The mutated object `n`, pinned to the resourceVersion of `old` unless it names one.
fn pinned(mut n: Value, old: Option<&Value>) -> Value {
    if let Some(old) = old
        && meta::meta_str(&n, "resourceVersion").is_none_or(str::is_empty)
        && let Some(rv) = meta::meta_str(old, "resourceVersion")
    {
        meta::set_meta(&mut n, "resourceVersion", json!(rv));
    }
    n
}

/// The patch `body` (sent as `ct`) applied to `old` (the object as served), under the same
/// rules as the PATCH verb ([`crate::api::patch`]).
pub(crate) fn apply_patch(
    old: Option<&Value>,
    rt: &ResourceType,
    ct: &str,
    body: &[u8],
) -> Result<Value, ApiError> {
    let Some(old) = old else {
        return Err(ApiError::internal("no object to patch"));
    };
    Patch::decode(ct, body, Target::of(rt.crd.is_some()))?.apply(old)
}
