//! Conversion of custom resources between served versions through a conversion webhook
//! (`spec.conversion.strategy: Webhook`), as a real API server does it.
//!
//! A CRD's `spec.conversion` is validated here as upstream validates it ([`validate`]:
//! `webhookClientConfig` with exactly one of `url` / `service`, an https URL without user
//! info, query or fragment, a `caBundle` holding PEM certificates, and
//! `conversionReviewVersions` naming `v1` or `v1beta1`). `crd` registers the resulting
//! [`Conversion`] in the `registry` together with the CRD's types; `strategy: None` has none
//! and keeps the plain apiVersion rewrite of the verbs.
//!
//! Where objects are converted (`layer`, a wrapper around `verbs::dispatch` called by the
//! `server`): a request at a version other than the storage version has its body pruned,
//! defaulted and validated against the requested version's schema, converted to the storage
//! version and handed to the verbs at the storage-version type; what the verbs answer (an
//! object, a list — converted in ONE `ConversionReview` —, or each chunk of watch events) is
//! converted back to the requested version. The webhook call and the checks of its answer
//! (`review`: uid echoed, `convertedObjects` count, apiVersion and kind of each result,
//! metadata other than labels and annotations restored from the original) follow
//! kube-apiserver's `webhook_converter.go`; any failure is a 500 `conversion webhook for
//! <group/version, Kind=kind> failed: ...` and nothing is stored.
//!
//! Admission webhooks run inside the verbs, so they are matched at the storage version
//! (`requestKind` still names the version asked for); under `matchPolicy: Equivalent` a
//! webhook whose rules name another version gets the objects converted to it ([`convert_to`]).
//!
//! Limits: a JSON or merge patch
//! at a non-storage version is applied to the object converted to that version, which is
//! then converted back and written as an update pinned to the resourceVersion it was computed
//! from (retried on a conflict); server-side apply and `/scale` at a non-storage version go
//! to the storage version unconverted (their field paths must mean the same in both
//! versions); `service` client configs are accepted but cannot be reached (no cluster DNS),
//! so conversions through them fail; `as=Table` columns are computed from the storage version;
//! requests at the storage version are not converted, so objects written before the CRD's
//! storage version changed are served as they were stored.

mod layer;
mod review;

use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::registry::context::State;

use crate::api::status::ApiError;
use crate::api::validation::FieldCause;

pub(crate) use layer::dispatch;

/// `obj` (at `rt`'s version) as served at `target`, another version of the same resource:
/// through the CRD's conversion webhook, or by rewriting `apiVersion` when it has none.
pub(crate) async fn convert_to(
    state: &State,
    rt: &ResourceType,
    mut obj: Value,
    target: &ResourceType,
) -> Result<Value, ApiError> {
    let conv = state.registry.snapshot().conversion(rt).cloned();
    match conv {
        Some(conv) => review::convert_one(&conv, obj, &target.api_version()).await,
        None => {
            obj["apiVersion"] = json!(target.api_version());
            Ok(obj)
        }
    }
}

pub(crate) use crate::registry::conversion::Conversion;
use crate::registry::conversion::{REVIEW_VERSIONS, str_at, strings};

/// Upstream's `validateCustomResourceConversion` over a CRD (field paths as the API server
/// reports them, from its internal type).
pub(crate) fn validate(crd: &Value) -> Vec<FieldCause> {
    const F: &str = "spec.conversion";
    let mut causes = Vec::new();
    let Some(conv) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return causes;
    };
    let strategy = str_at(conv, "/strategy");
    let webhook = conv.get("webhook").filter(|w| !w.is_null());
    let cc = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions = webhook.and_then(|w| w.get("conversionReviewVersions"));
    match strategy {
        "" => causes.push(FieldCause::required(format!("{F}.strategy"), "")),
        "None" | "Webhook" => {}
        other => causes.push(FieldCause::not_supported(
            format!("{F}.strategy"),
            &json!(other),
            &[json!("None"), json!("Webhook")],
        )),
    }
    if strategy != "Webhook" {
        if cc.is_some() {
            causes.push(FieldCause::forbidden(
                format!("{F}.webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !strings(versions).is_empty() {
            causes.push(FieldCause::forbidden(
                format!("{F}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return causes;
    }
    match cc {
        None => causes.push(FieldCause::required(
            format!("{F}.webhookClientConfig"),
            "required when strategy is set to Webhook",
        )),
        Some(cc) => causes.extend(client_config(cc)),
    }
    causes.extend(review_versions(versions));
    causes
}

fn client_config(cc: &Value) -> Vec<FieldCause> {
    const F: &str = "spec.conversion.webhookClientConfig";
    let mut causes = Vec::new();
    let url = cc.get("url").and_then(Value::as_str);
    let svc = cc.get("service").filter(|s| !s.is_null());
    match (url, svc) {
        (Some(_), Some(_)) | (None, None) => causes.push(FieldCause::required(
            F,
            "exactly one of url or service is required",
        )),
        (Some(u), None) => {
            if let Some(why) = bad_url(u) {
                causes.push(FieldCause::invalid(format!("{F}.url"), &json!(u), why));
            }
        }
        (None, Some(s)) => {
            for k in ["name", "namespace"] {
                if str_at(s, &format!("/{k}")).is_empty() {
                    causes.push(FieldCause::required(format!("{F}.service.{k}"), ""));
                }
            }
            if let Some(p) = s.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&p)
            {
                causes.push(FieldCause::invalid(
                    format!("{F}.service.port"),
                    &json!(p),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    let ca = str_at(cc, "/caBundle");
    if !ca.is_empty()
        && let Err(e) = crate::admission::client::roots(ca)
    {
        tracing::debug!(error = %e, "invalid conversion caBundle");
        causes.push(FieldCause::invalid(
            format!("{F}.caBundle"),
            &json!(ca),
            "unable to load root certificates: unable to parse bytes as PEM block",
        ));
    }
    causes
}

/// Why a webhook URL is not acceptable (upstream's `ValidateWebhookURL` with https forced).
fn bad_url(u: &str) -> Option<&'static str> {
    if u.contains('#') {
        return Some("fragments are not permitted in the URL");
    }
    if u.contains('?') {
        return Some("query parameters are not permitted in the URL");
    }
    let Ok(uri) = u.parse::<http::Uri>() else {
        return Some("must be a valid URL");
    };
    if uri.scheme_str() != Some("https") {
        return Some("'https' is the only allowed URL scheme");
    }
    match uri.authority() {
        Some(a) if a.as_str().contains('@') => Some("user information is not permitted in the URL"),
        Some(a) if !a.host().is_empty() => None,
        _ => Some("host must be specified"),
    }
}

fn review_versions(versions: Option<&Value>) -> Vec<FieldCause> {
    const F: &str = "spec.conversion.conversionReviewVersions";
    let list = strings(versions);
    let mut causes = Vec::new();
    if list.len() > 100 {
        causes.push(FieldCause::too_many(F, list.len(), 100));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        if seen.contains(&v.as_str()) {
            causes.push(FieldCause::invalid(
                format!("{F}[{i}]"),
                &json!(v),
                "duplicate version",
            ));
        }
        seen.push(v);
    }
    if !list.iter().any(|v| REVIEW_VERSIONS.contains(&v.as_str())) {
        causes.push(FieldCause::invalid(
            F,
            &json!(list),
            "must include at least one of v1, v1beta1",
        ));
    }
    causes
}
