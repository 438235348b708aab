//! Layer 3, admission (kube-apiserver's `admission/plugin/webhook`): webhooks called on the old and
//! new objects of a write, as a real API server calls them. Before a create, update (PUT or PATCH)
//! or delete is written, the handlers
//! ([`endpoints::handlers::admit`](crate::endpoints::handlers::admit)) hand admission its
//! [`Attributes`] and the new object; the stored `MutatingWebhookConfiguration`s and then
//! `ValidatingWebhookConfiguration`s whose rules (operations, groups, versions, resources with
//! subresources, scope), namespace selector and object selector match are called over TLS
//! (`client`) with an `admission.k8s.io/v1` `AdmissionReview`. Mutating patches are applied in
//! order and the write continues with the patched object; a denial becomes the client's error
//! (`admission webhook "<name>" denied the request: <message>`, with the webhook's code); a webhook
//! that cannot be reached fails the write (`failurePolicy: Fail`, a 500) or is skipped (`Ignore`);
//! `timeoutSeconds` bounds each call; on a dry run only webhooks with `sideEffects: None` /
//! `NoneOnDryRun` are called (else 400). Under `matchPolicy: Equivalent` (the default) a webhook
//! whose rules name another served version of the resource is called at that version: the objects
//! are converted to it (through the CRD's conversion webhook,
//! [`registry::conversion`](crate::registry::conversion)) and a mutation back. A response's
//! `warnings` go to the request's [`Warnings`], which the server writes as `Warning: 299 -
//! "<text>"` headers, allowed or denied. Admission may call `api`, `storage`, `registry` and
//! `webhook_client` (over which it calls the webhooks), never the HTTP side.
//!
//! Configurations are ordinary objects: create them through the API, or give them
//! to `EnvironmentBuilder::webhooks` (`env`).
//! Simplifications: webhooks see the object before the server sets uid /
//! resourceVersion on a create; a `clientConfig.service` is reachable only through a route the
//! environment was given (`EnvironmentBuilder::service_route`; there is no cluster DNS).
//! Server-side apply's computed result is reviewed as the CREATE or UPDATE it amounts to.

#[cfg(feature = "cel")]
pub(crate) mod policy;
mod rules;

/// Built without the `cel` feature: ValidatingAdmissionPolicies and their bindings are refused
/// when written (`registry::without_cel`), so none is ever bound and no write runs one.
#[cfg(not(feature = "cel"))]
pub(crate) mod policy {
    use serde_json::Value;

    use crate::api::status::ApiError;
    use crate::registry::ResourceType;
    use crate::registry::context::Apiserver;

    use super::{Attributes, Configured};

    /// Whether any policy binding is stored (none can be, without CEL).
    pub(crate) fn any_bound(configured: &Configured, _: &ResourceType) -> bool {
        !configured.no_bindings()
    }

    /// No policy to run.
    pub(crate) fn admit(
        _: &Apiserver,
        _: &Configured,
        _: &Attributes,
        _: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
}

use std::sync::Arc;

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::api::warning::Warnings;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::conversion::convert_to;
use crate::storage::{Population, Store};

use rules::Hook;

/// A webhook configuration installed at start by
/// `EnvironmentBuilder::webhooks`.
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

fn config_type(api: &Apiserver, plural: &str) -> Option<Arc<ResourceType>> {
    api.registry.snapshot().get(GROUP, "v1", plural).cloned()
}

/// Stores the configurations given to the builder.
pub(crate) fn seed(api: &Arc<Apiserver>, configs: &[WebhookConfiguration]) -> Result<(), String> {
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
        let rt = config_type(api, plural).ok_or("admissionregistration.k8s.io/v1 is not served")?;
        let mut obj = obj.take();
        crate::registry::objects::check_type(&mut obj, &rt, None).map_err(|e| e.message)?;
        crate::registry::hooks::create_object(api, &rt, None, obj, Default::default())
            .map_err(|e| e.message)?;
    }
    Ok(())
}

/// Whether any webhook configuration or policy binding is stored, read without the store's lock
/// or a lookup: the counts of their three collections ([`Population`]), which every write reads
/// before it asks for the configurations themselves (most servers have none). A configuration
/// created or deleted is counted by the time its write is answered, so the next write sees it.
/// Held by the HTTP side's state (`endpoints::State`), made once per server.
#[derive(Clone, Debug)]
pub(crate) struct Configured {
    mutating: Population,
    validating: Population,
    bindings: Population,
}

impl Configured {
    /// The counts of `store`'s webhook configurations and policy bindings.
    pub fn new(store: &Store) -> Self {
        let count = |plural: &str| store.population(&crate::storage::store_key(GROUP, plural));
        Configured {
            mutating: count("mutatingwebhookconfigurations"),
            validating: count("validatingwebhookconfigurations"),
            bindings: count("validatingadmissionpolicybindings"),
        }
    }

    fn no_webhooks(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty()
    }

    fn no_bindings(&self) -> bool {
        self.bindings.is_empty()
    }
}

fn configs(api: &Apiserver, plural: &str) -> Vec<Value> {
    let Some(rt) = config_type(api, plural) else {
        return Vec::new();
    };
    match api.store.list(&rt.store_key(), None, None) {
        Ok((_, items)) => items
            .iter()
            .map(|(_, b)| crate::storage::parse(b))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The operation a write amounts to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
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

/// What admission is told about one write (upstream's `admission.Attributes`).
pub(crate) struct Attributes<'a> {
    pub op: Op,
    /// The type the write goes to (the storage version when a request is served converted).
    pub rt: &'a Arc<ResourceType>,
    /// The type the client asked for (`requestKind`).
    pub requested: &'a Arc<ResourceType>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub sub: Option<&'a str>,
    pub dry_run: bool,
    /// The stored object as served at `rt` (updates and deletes).
    pub old: Option<&'a Value>,
    /// Where the webhooks' `warnings` go.
    pub warnings: &'a Warnings,
    /// Who writes: the `authentication.k8s.io/v1` `UserInfo` of the request.
    pub user: &'a Value,
}

/// The webhooks that review one write, mutating first: each with the served version it is
/// called at.
pub(crate) struct Matching {
    mutating: Vec<Matched>,
    validating: Vec<Matched>,
}

/// A webhook and the served version it is called at.
type Matched = (Hook, Arc<ResourceType>);

/// The webhooks whose rules match `op` on `rt` (`sub`), or `None` when none does (the handlers
/// then need not read or build the objects). Webhook configurations and review resources are
/// never reviewed.
pub(crate) fn matching(
    api: &Apiserver,
    configured: &Configured,
    rt: &Arc<ResourceType>,
    sub: Option<&str>,
    op: Op,
) -> Option<Matching> {
    if rt.virtual_create || rt.group == GROUP || configured.no_webhooks() {
        // No configuration at all (most requests): nothing to list or match the type against.
        return None;
    }
    let mutating = configs(api, "mutatingwebhookconfigurations");
    let validating = configs(api, "validatingwebhookconfigurations");
    if mutating.is_empty() && validating.is_empty() {
        return None;
    }
    let equivalents = api.registry.siblings(rt);
    let matching = |configs: &[Value]| -> Vec<Matched> {
        rules::hooks(configs)
            .into_iter()
            .filter_map(|h| {
                let at = h.matching_type(rt, &equivalents, sub, op.as_str())?;
                Some((h, at))
            })
            .collect()
    };
    let m = Matching {
        mutating: matching(&mutating),
        validating: matching(&validating),
    };
    (!m.mutating.is_empty() || !m.validating.is_empty()).then_some(m)
}

impl Matching {
    /// Runs the webhooks on `new` (none for a delete): mutating ones in order, each seeing the
    /// previous one's result, then validating ones. `Some` with the object the mutating
    /// webhooks produced, `None` when it passed unchanged; a denial is the error.
    pub async fn admit(
        &self,
        api: &Apiserver,
        a: &Attributes<'_>,
        mut new: Option<Value>,
    ) -> Result<Option<Value>, ApiError> {
        let ns_labels = rules::namespace_labels(api, a.rt, a.namespace, new.as_ref().or(a.old));
        let mut mutated = false;
        for (hooks, is_mutating) in [(&self.mutating, true), (&self.validating, false)] {
            for (h, at) in hooks {
                if !h.matches_selectors(ns_labels.as_ref(), new.as_ref(), a.old) {
                    continue;
                }
                let call = Call { api, a, h, at };
                if let Some(patched) = call.run(is_mutating, new.as_ref()).await? {
                    new = Some(patched);
                    mutated = true;
                }
            }
        }
        Ok(new.filter(|_| mutated))
    }
}

/// One webhook call of one write.
struct Call<'a> {
    api: &'a Apiserver,
    a: &'a Attributes<'a>,
    h: &'a Hook,
    /// The served version the webhook is called at.
    at: &'a Arc<ResourceType>,
}

impl Call<'_> {
    /// Calls the webhook with the (new, old) objects. A denial or a failed call under
    /// `failurePolicy: Fail` is the error; a mutating webhook's patch gives the patched new
    /// object (at the version of the write).
    async fn run(&self, is_mutating: bool, new: Option<&Value>) -> Result<Option<Value>, ApiError> {
        let (a, h, at) = (self.a, self.h, self.at);
        let rt = a.rt;
        if a.dry_run && !h.dry_run_safe() {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                h.name
            )));
        }
        // Called at an equivalent version: the objects go to it and back (`conversion`).
        let (new_at, old_at) = if at.version == rt.version {
            (new.cloned(), a.old.cloned())
        } else {
            (
                convert_opt(self.api, rt, new.cloned(), at).await?,
                convert_opt(self.api, rt, a.old.cloned(), at).await?,
            )
        };
        let review = review(a, at, new_at.as_ref(), old_at.as_ref());
        let Some(answer) = call_webhook(h, &review).await? else {
            return Ok(None);
        };
        let resp = answer.get("response").cloned().unwrap_or(Value::Null);
        // Upstream records warnings before looking at `allowed`: a denial carries them too.
        a.warnings.add_all(resp.get("warnings"));
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
            Ok(Some(convert_to(&self.api.registry, at, patched, rt).await?))
        }
    }
}

/// The webhook's answer, `None` when the call failed under `failurePolicy: Ignore`.
async fn call_webhook(h: &Hook, review: &Value) -> Result<Option<Value>, ApiError> {
    match crate::webhook_client::call(&h.url, &h.ca_bundle, review, h.timeout).await {
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

/// An optional object converted from `rt`'s version to `at`'s.
async fn convert_opt(
    api: &Apiserver,
    rt: &ResourceType,
    obj: Option<Value>,
    at: &ResourceType,
) -> Result<Option<Value>, ApiError> {
    match obj {
        Some(o) => Ok(Some(convert_to(&api.registry, rt, o, at).await?)),
        None => Ok(None),
    }
}

/// The `AdmissionReview` of a write for a webhook called at `rt`: `kind`/`resource` name the
/// version the webhook is called at, `requestKind`/`requestResource` the one the client asked
/// for.
fn review(
    a: &Attributes<'_>,
    rt: &ResourceType,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let asked = a.requested;
    let options = match a.op {
        Op::Create => json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}),
        Op::Update => json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}),
        Op::Delete => json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}),
    };
    let mut req = json!({
        "uid": crate::api::meta::new_uid(),
        "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "requestKind": {"group": asked.group, "version": asked.version, "kind": asked.kind},
        "requestResource": {"group": asked.group, "version": asked.version, "resource": asked.plural},
        "name": a.name,
        "operation": a.op.as_str(),
        "userInfo": a.user,
        "object": new.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": options,
    });
    if let Some(ns) = a.namespace.filter(|_| rt.namespaced) {
        req["namespace"] = json!(ns);
    }
    if let Some(s) = a.sub {
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
