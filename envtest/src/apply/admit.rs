//! Server-side apply through the admission webhooks, as the API server runs them: the apply
//! is computed first (a dry run of `super::Apply::run`), the result goes to
//! `crate::admission::admit` as the CREATE or UPDATE it amounts to — mutating webhooks may
//! patch it, a validating denial stops the write with nothing stored — and a mutated result
//! is then stored as it came back (pinned to the resourceVersion it was computed from, so a
//! concurrent write makes it a 409). The managedFields entries are the ones the apply
//! computed; fields a webhook added are owned by no one, as upstream.

use std::sync::Arc;

use http::{HeaderValue, Method, header};
use serde_json::Value;

use crate::api::status::ApiError;
use crate::endpoints::Req;
use crate::registry::context::State;
use crate::router::ResourceRoute;
use crate::{api::meta, verbs};

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

/// Runs the webhooks on the applied result `out` (from a dry run); `Some` with the object a
/// mutating webhook produced, `None` when it passed unchanged.
pub(crate) async fn review(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
    create: bool,
    out: &Value,
) -> Result<Option<Value>, ApiError> {
    let body = serde_json::to_vec(&*crate::registry::objects::served(out, &r.rt))
        .map_err(ApiError::internal)?;
    let mut headers = req.headers.clone();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let as_write = Req {
        method: if create { Method::POST } else { Method::PUT },
        query: req.query.clone(),
        headers,
        body: body.clone().into(),
        warnings: req.warnings.clone(),
        served_as: req.served_as.clone(),
    };
    let route = ResourceRoute {
        name: if create { None } else { r.name.clone() },
        ..r.clone()
    };
    let admitted = crate::admission::admit(state, &route, as_write).await?;
    if admitted.body == body {
        return Ok(None);
    }
    serde_json::from_slice(&admitted.body)
        .map(Some)
        .map_err(ApiError::internal)
}

/// Stores the object a mutating webhook returned: created (201) or updated (200).
pub(crate) fn store(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    mut obj: Value,
    create: bool,
    w: verbs::WriteOpts,
) -> Result<(u16, Arc<Value>), ApiError> {
    crate::registry::objects::check_type(
        &mut obj,
        &r.rt,
        &crate::registry::objects::siblings(state, &r.rt),
    )?;
    let ns = r.namespace.as_deref();
    if create {
        meta::remove_meta(&mut obj, "resourceVersion");
        let out = verbs::create::create_object(state, &r.rt, ns, obj, w)?;
        return Ok((201, out));
    }
    let (out, _) = verbs::update::update_object(
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
