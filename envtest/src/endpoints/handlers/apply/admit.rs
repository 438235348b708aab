//! Server-side apply through the admission webhooks, as the API server runs them: the apply is
//! computed first (a dry run of [`super::Apply::run`]), the result goes to admission
//! ([`super::super::admit::object`]) as the CREATE or UPDATE it amounts to — mutating webhooks may
//! patch it, a validating denial stops the write with nothing stored — and a mutated result is then
//! stored as it came back (pinned to the resourceVersion it was computed from, so a concurrent
//! write makes it a 409). The managedFields entries are the ones the apply computed; fields a
//! webhook added are owned by no one, as upstream.

use std::sync::Arc;

use serde_json::Value;

use crate::admission::Op;
use crate::api::meta;
use crate::api::status::ApiError;
use crate::endpoints::Req;
use crate::endpoints::State;
use crate::endpoints::handlers::admit;
use crate::endpoints::router::ResourceRoute;
use crate::registry::hooks;
use crate::registry::rest::WriteOpts;
use crate::storage::Committed;

const GROUP: &str = "admissionregistration.k8s.io";

/// Whether any webhook configuration is stored (else admission has nothing to do).
pub(crate) fn configured(state: &State) -> bool {
    let snap = state.registry.snapshot();
    [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ]
    .iter()
    .any(|p| {
        snap.get(GROUP, "v1", p)
            .is_some_and(|rt| state.store.count(&rt.store_key()) > 0)
    })
}

/// Runs the webhooks on the applied result `out` (from a dry run) as the CREATE or UPDATE it
/// amounts to; `Some` with the object a mutating webhook produced, `None` when it passed
/// unchanged.
pub(crate) async fn review(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
    create: bool,
    out: &Value,
) -> Result<Option<Value>, ApiError> {
    let new = crate::registry::objects::served(out, &r.rt).into_owned();
    let route = ResourceRoute {
        name: if create { None } else { r.name.clone() },
        ..r.clone()
    };
    let op = if create { Op::Create } else { Op::Update };
    let given = new.clone();
    let admitted = admit::object(state, &route, req, op, |_| Ok(Some(new))).await?;
    Ok(admitted.filter(|m| *m != given))
}

/// Stores the object a mutating webhook returned: created (201) or updated (200).
pub(crate) fn store(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    mut obj: Value,
    create: bool,
    w: WriteOpts,
) -> Result<(u16, Committed), ApiError> {
    crate::registry::objects::check_type(&mut obj, &r.rt, Some(&state.registry))?;
    let ns = r.namespace.as_deref();
    if create {
        meta::remove_meta(&mut obj, "resourceVersion");
        let out = hooks::create_object(state, &r.rt, ns, obj, w)?;
        return Ok((201, out));
    }
    let (out, _) = hooks::update_object(
        state,
        &r.rt,
        ns,
        name,
        r.sub.as_deref(),
        w,
        false,
        move |_| Ok(obj),
    )?;
    Ok((200, out))
}
