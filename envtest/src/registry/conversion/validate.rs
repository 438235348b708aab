//! Upstream's validation of a CRD's `spec.conversion` ([`validate`]): `webhookClientConfig` with
//! exactly one of `url` / `service`, an https URL without user info, query or fragment, a
//! `caBundle` holding PEM certificates (read by
//! [`webhook_client::roots`](crate::webhook_client::roots)), and `conversionReviewVersions` naming
//! `v1` or `v1beta1`. Called by the CRD strategy ([`super::super::crd`]).

use serde_json::{Value, json};

use super::{REVIEW_VERSIONS, str_at, strings};
use crate::api::validation::FieldCause;

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
        && let Err(e) = crate::webhook_client::roots(ca)
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
