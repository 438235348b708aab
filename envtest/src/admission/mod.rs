//! Admission webhooks, called as a real API server calls them: before a create,
//! update (PUT or PATCH) or delete reaches the `verbs`, the stored
//! `MutatingWebhookConfiguration`s and then `ValidatingWebhookConfiguration`s whose
//! rules (operations, groups, versions, resources with subresources, scope),
//! namespace selector and object selector match are called over TLS (`client`) with an
//! `admission.k8s.io/v1` `AdmissionReview`. Mutating patches are applied in order and
//! the write continues with the patched object; a denial becomes the client's error
//! (`admission webhook "<name>" denied the request: <message>`, with the webhook's
//! code); a webhook that cannot be reached fails the write (`failurePolicy: Fail`, a
//! 500) or is skipped (`Ignore`); `timeoutSeconds` bounds each call; on a dry run
//! only webhooks with `sideEffects: None` / `NoneOnDryRun` are called (else 400).
//! Under `matchPolicy: Equivalent` (the default) a webhook whose rules name another served
//! version of the resource is called at that version: the objects are converted to it
//! (through the CRD's conversion webhook, `crate::conversion`) and a mutation back.
//! A response's `warnings` go to the request's [`Warnings`](crate::endpoints::Warnings), which
//! the server writes as `Warning: 299 - "<text>"` headers, allowed or denied.
//!
//! Configurations are ordinary objects: create them through the API, or give them
//! to [`EnvironmentBuilder::webhooks`](crate::EnvironmentBuilder::webhooks).
//! Simplifications: webhooks see the object before the server sets uid /
//! resourceVersion on a create; only `clientConfig.url` is supported (not `service`).
//! Server-side apply is admitted by `crate::apply::admit`: its computed result is reviewed
//! as the CREATE or UPDATE it amounts to.

pub(crate) mod client;
mod rules;

use std::sync::Arc;

use base64::Engine;
use http::Method;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use serde_json::{Value, json};

use crate::api::patch::{Patch, Target};
use crate::api::status::ApiError;
use crate::endpoints::{Req, Warnings};
use crate::registry::ResourceType;
use crate::registry::context::State;
use crate::router::ResourceRoute;
use crate::{api::meta, verbs};

use rules::Hook;

/// A webhook configuration installed at start by
/// [`EnvironmentBuilder::webhooks`](crate::EnvironmentBuilder::webhooks).
#[derive(Clone, Debug)]
pub enum WebhookConfiguration {
    /// Defaulting webhooks.
    Mutating(MutatingWebhookConfiguration),
    /// Validating webhooks.
    Validating(ValidatingWebhookConfiguration),
}

impl From<MutatingWebhookConfiguration> for WebhookConfiguration {
    fn from(c: MutatingWebhookConfiguration) -> Self {
        Self::Mutating(c)
    }
}

impl From<ValidatingWebhookConfiguration> for WebhookConfiguration {
    fn from(c: ValidatingWebhookConfiguration) -> Self {
        Self::Validating(c)
    }
}

const GROUP: &str = "admissionregistration.k8s.io";

fn config_type(state: &State, plural: &str) -> Option<Arc<ResourceType>> {
    state.registry.snapshot().get(GROUP, "v1", plural).cloned()
}

/// Stores the configurations given to the builder.
pub(crate) fn seed(state: &Arc<State>, configs: &[WebhookConfiguration]) -> Result<(), String> {
    for c in configs {
        let (plural, mut obj) = match c {
            WebhookConfiguration::Mutating(m) => {
                ("mutatingwebhookconfigurations", serde_json::to_value(m))
            }
            WebhookConfiguration::Validating(v) => {
                ("validatingwebhookconfigurations", serde_json::to_value(v))
            }
        };
        let obj = obj.as_mut().map_err(|e| e.to_string())?;
        let rt =
            config_type(state, plural).ok_or("admissionregistration.k8s.io/v1 is not served")?;
        let mut obj = obj.take();
        crate::registry::objects::check_type(&mut obj, &rt, &[]).map_err(|e| e.message)?;
        verbs::create::create_object(state, &rt, None, obj, Default::default())
            .map_err(|e| e.message)?;
    }
    Ok(())
}

fn configs(state: &State, plural: &str) -> Vec<Value> {
    let Some(rt) = config_type(state, plural) else {
        return Vec::new();
    };
    match state.store.list(&rt.store_key(), None, None) {
        Ok((_, items)) => items
            .iter()
            .map(|(_, b)| crate::storage::parse(b))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Create,
    Update,
    Delete,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Create => "CREATE",
            Op::Update => "UPDATE",
            Op::Delete => "DELETE",
        }
    }
}

/// Runs the matching webhooks for a write and returns the request to execute: the
/// same one, or (after a mutation) one carrying the patched object — a PATCH then
/// becomes a PUT of the patched object, pinned to the resourceVersion it was computed from.
pub(crate) async fn admit(
    state: &Arc<State>,
    r: &ResourceRoute,
    mut req: Req,
) -> Result<Req, ApiError> {
    let rt = &r.rt;
    if rt.virtual_create || rt.group == GROUP {
        return Ok(req);
    }
    let ct = req.media_type().to_string();
    let Some(op) = op_of(&req.method, r, &ct) else {
        return Ok(req);
    };
    let (mutating, validating) = matching_hooks(state, r, op);
    if mutating.is_empty() && validating.is_empty() {
        return Ok(req);
    }
    let dry_run = req.query.dry_run()?;
    let Some((old, mut new)) = objects(state, r, op, &req, &ct)? else {
        // Let the verb answer 404.
        return Ok(req);
    };
    let name = r
        .name
        .clone()
        .or_else(|| new.as_ref().map(|n| meta::name(n).to_string()))
        .unwrap_or_default();
    let ns_labels = rules::namespace_labels(
        state,
        rt,
        r.namespace.as_deref(),
        new.as_ref().or(old.as_ref()),
    );
    let call = Call {
        state,
        r,
        op,
        name: &name,
        dry_run,
        requested: req.served_as.clone().unwrap_or_else(|| rt.clone()),
    };
    let mut mutated = false;
    for (hooks, is_mutating) in [(&mutating, true), (&validating, false)] {
        for (h, at) in hooks.iter() {
            if !h.matches_selectors(ns_labels.as_ref(), new.as_ref(), old.as_ref()) {
                continue;
            }
            let objs = (new.as_ref(), old.as_ref());
            if let Some(patched) = call.hook(h, at, is_mutating, objs, &req.warnings).await? {
                new = Some(patched);
                mutated = true;
            }
        }
    }
    if mutated && let Some(n) = new {
        pin(&mut req, n, old.as_ref())?;
    }
    Ok(req)
}

/// The admission operation of a request, or `None` when admission does not review it
/// (reads, subresource creates and deletes, server-side apply — `apply` admits that itself).
fn op_of(method: &Method, r: &ResourceRoute, ct: &str) -> Option<Op> {
    Some(match (method, r.name.as_deref()) {
        (&Method::POST, None) if r.sub.is_none() => Op::Create,
        (&Method::PUT, Some(_)) => Op::Update,
        (&Method::PATCH, Some(_)) if ct != "application/apply-patch+yaml" => Op::Update,
        (&Method::DELETE, Some(_)) if r.sub.is_none() => Op::Delete,
        _ => return None,
    })
}

/// The mutating and the validating webhooks whose rules match `op` on `r`, each with the
/// served version it is called at.
fn matching_hooks(state: &State, r: &ResourceRoute, op: Op) -> (Vec<Matched>, Vec<Matched>) {
    let equivalents = crate::registry::objects::siblings(state, &r.rt);
    let matching = |plural: &str| -> Vec<Matched> {
        rules::hooks(&configs(state, plural))
            .into_iter()
            .filter_map(|h| {
                let at = h.matching_type(&r.rt, &equivalents, r.sub.as_deref(), op.as_str())?;
                Some((h, at))
            })
            .collect()
    };
    (
        matching("mutatingwebhookconfigurations"),
        matching("validatingwebhookconfigurations"),
    )
}

/// A webhook and the served version it is called at.
type Matched = (Hook, Arc<ResourceType>);

/// The old (stored, as served) and new (decoded or patched) objects of a write, or `None` when
/// the object to update or delete does not exist.
#[allow(clippy::type_complexity)]
fn objects(
    state: &State,
    r: &ResourceRoute,
    op: Op,
    req: &Req,
    ct: &str,
) -> Result<Option<(Option<Value>, Option<Value>)>, ApiError> {
    let rt = &r.rt;
    let old: Option<Value> = match (op, r.name.as_deref()) {
        (Op::Create, _) | (_, None) => None,
        (_, Some(name)) => {
            let okey = crate::registry::objects::okey(rt, r.namespace.as_deref(), name);
            match state.store.get_value(&rt.store_key(), &okey) {
                Some(v) => Some(crate::registry::objects::served(&v, rt).into_owned()),
                None => return Ok(None),
            }
        }
    };
    let mut new: Option<Value> = match op {
        Op::Delete => None,
        _ if req.method == Method::PATCH => Some(apply_patch(old.as_ref(), rt, ct, &req.body)?),
        _ => Some(crate::endpoints::decode_body(req)?),
    };
    if let (Some(n), Some(ns)) = (new.as_mut(), r.namespace.as_deref())
        && rt.namespaced
        && meta::namespace(n).is_empty()
    {
        meta::set_meta(n, "namespace", json!(ns));
    }
    Ok(Some((old, new)))
}

/// What every webhook call of one write shares.
struct Call<'a> {
    state: &'a Arc<State>,
    r: &'a ResourceRoute,
    op: Op,
    name: &'a str,
    dry_run: bool,
    /// The type the client asked for (`requestKind`).
    requested: Arc<ResourceType>,
}

impl Call<'_> {
    /// Calls one webhook at version `at` with the (new, old) objects. A denial or a failed call
    /// under `failurePolicy: Fail` is the error; a mutating webhook's patch gives the patched
    /// new object (at the storage version).
    async fn hook(
        &self,
        h: &Hook,
        at: &Arc<ResourceType>,
        is_mutating: bool,
        (new, old): (Option<&Value>, Option<&Value>),
        warnings: &Warnings,
    ) -> Result<Option<Value>, ApiError> {
        let rt = &self.r.rt;
        if self.dry_run && !h.dry_run_safe() {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                h.name
            )));
        }
        // Called at an equivalent version: the objects go to it and back (`conversion`).
        let (new_at, old_at) = if at.version == rt.version {
            (new.cloned(), old.cloned())
        } else {
            (
                convert_opt(self.state, rt, new.cloned(), at).await?,
                convert_opt(self.state, rt, old.cloned(), at).await?,
            )
        };
        let kinds = Kinds {
            at,
            requested: &self.requested,
        };
        let review = review(
            self.r,
            kinds,
            self.op,
            self.name,
            new_at.as_ref(),
            old_at.as_ref(),
            self.dry_run,
        );
        let Some(answer) = call_webhook(h, &review).await? else {
            return Ok(None);
        };
        let resp = answer.get("response").cloned().unwrap_or(Value::Null);
        // Upstream records warnings before looking at `allowed`: a denial carries them too.
        warnings.add_all(resp.get("warnings"));
        if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
            return Err(denied(&h.name, &resp));
        }
        let (true, Some(n)) = (is_mutating, new_at.as_ref()) else {
            return Ok(None);
        };
        let Some(p) = decode_patch(&resp).map_err(|e| {
            ApiError::internal(format!("webhook {:?} returned a bad patch: {e}", h.name))
        })?
        else {
            return Ok(None);
        };
        let patched = crate::api::patch::apply_json(n, &p).map_err(|e| {
            ApiError::internal(format!(
                "applying the patch of webhook {:?}: {}",
                h.name, e.message
            ))
        })?;
        if at.version == rt.version {
            Ok(Some(patched))
        } else {
            Ok(Some(
                crate::conversion::convert_to(self.state, at, patched, rt).await?,
            ))
        }
    }
}

/// The webhook's answer, `None` when the call failed under `failurePolicy: Ignore`.
async fn call_webhook(h: &Hook, review: &Value) -> Result<Option<Value>, ApiError> {
    match client::call(&h.url, &h.ca_bundle, review, h.timeout).await {
        Ok(a) => Ok(Some(a)),
        Err(e) if h.ignore_failures => {
            tracing::warn!(webhook = %h.name, error = %e, "webhook call failed; ignored (failurePolicy: Ignore)");
            Ok(None)
        }
        Err(e) => {
            tracing::warn!(webhook = %h.name, error = %e, "webhook call failed");
            Err(ApiError::internal(format!(
                "failed calling webhook {:?}: {e}",
                h.name
            )))
        }
    }
}

/// Makes `req` carry the mutated object `n` as JSON: a PATCH becomes a PUT, pinned to the
/// resourceVersion of `old` unless the object names one.
fn pin(req: &mut Req, mut n: Value, old: Option<&Value>) -> Result<(), ApiError> {
    if let Some(old) = old
        && meta::meta_str(&n, "resourceVersion").is_none_or(str::is_empty)
        && let Some(rv) = meta::meta_str(old, "resourceVersion")
    {
        meta::set_meta(&mut n, "resourceVersion", json!(rv));
    }
    req.body = serde_json::to_vec(&n).map_err(ApiError::internal)?.into();
    req.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if req.method == Method::PATCH {
        req.method = Method::PUT;
    }
    Ok(())
}

/// The patch of `req` (sent as `ct`) applied to `old` (the object as served), under the same
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

/// An optional object converted from `rt`'s version to `at`'s.
async fn convert_opt(
    state: &State,
    rt: &ResourceType,
    obj: Option<Value>,
    at: &ResourceType,
) -> Result<Option<Value>, ApiError> {
    match obj {
        Some(o) => Ok(Some(crate::conversion::convert_to(state, rt, o, at).await?)),
        None => Ok(None),
    }
}

/// The versions a review names: `kind`/`resource` (the version the webhook is called at)
/// and `requestKind`/`requestResource` (the version the client asked for).
struct Kinds<'a> {
    at: &'a ResourceType,
    requested: &'a ResourceType,
}

fn review(
    r: &ResourceRoute,
    kinds: Kinds<'_>,
    op: Op,
    name: &str,
    new: Option<&Value>,
    old: Option<&Value>,
    dry_run: bool,
) -> Value {
    let (rt, asked) = (kinds.at, kinds.requested);
    let options = match op {
        Op::Create => json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}),
        Op::Update => json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}),
        Op::Delete => json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}),
    };
    let mut req = json!({
        "uid": uuid::Uuid::new_v4().to_string(),
        "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "requestKind": {"group": asked.group, "version": asked.version, "kind": asked.kind},
        "requestResource": {"group": asked.group, "version": asked.version, "resource": asked.plural},
        "name": name,
        "operation": op.as_str(),
        "userInfo": {"username": "envtest-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": new.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": dry_run,
        "options": options,
    });
    if let Some(ns) = r.namespace.as_deref().filter(|_| rt.namespaced) {
        req["namespace"] = json!(ns);
    }
    if let Some(s) = &r.sub {
        req["subResource"] = json!(s);
        req["requestSubResource"] = json!(s);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// The patch of a response: base64 (Go's encoding) or an array of bytes (kube's).
fn decode_patch(resp: &Value) -> Result<Option<json_patch::Patch>, String> {
    let raw = match resp.get("patch") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("not base64: {e}"))?,
        Some(Value::Array(a)) => a
            .iter()
            .map(|b| {
                b.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or("not a byte")
            })
            .collect::<Result<Vec<u8>, _>>()?,
        Some(_) => return Err("patch is neither base64 nor bytes".into()),
    };
    serde_json::from_slice(&raw)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Upstream's `ToStatusErr`: a code of at least 400, the webhook named in the message.
fn denied(name: &str, resp: &Value) -> ApiError {
    let st = resp.get("status").cloned().unwrap_or(Value::Null);
    let code = st
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400 && *c < 600)
        .unwrap_or(400);
    let by = format!("admission webhook {name:?} denied the request");
    let msg = st
        .get("message")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let reason = st
        .get("reason")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let message = match (msg, reason) {
        (Some(m), _) => format!("{by}: {m}"),
        (None, Some(r)) => format!("{by}: {r}"),
        _ => format!("{by} without explanation"),
    };
    let reason_static: &'static str = match reason {
        Some("Forbidden") => "Forbidden",
        Some("Invalid") => "Invalid",
        Some("Conflict") => "Conflict",
        Some("AlreadyExists") => "AlreadyExists",
        Some("NotFound") => "NotFound",
        Some("BadRequest") => "BadRequest",
        _ => match code {
            403 => "Forbidden",
            422 => "Invalid",
            409 => "Conflict",
            _ => "BadRequest",
        },
    };
    ApiError::new(code, reason_static, message)
}
