//! Conversion of custom resources between served versions (apiextensions' webhook converter): the
//! data of a CRD's webhook conversion ([`Conversion`]: where the webhook is, which version objects
//! are stored at), kept by the registry for every CRD with `strategy: Webhook`; the validation of
//! `spec.conversion` ([`validate`](mod@validate)); and the conversion itself ([`convert_to`], one
//! `ConversionReview` round trip in [`review`], over `webhook_client`). A CRD without a webhook
//! converts by rewriting `apiVersion`. Used by admission (webhooks matched at another version) and
//! by the handlers that serve at a non-storage version; calls `api` and `webhook_client` only.

pub(crate) mod review;
mod validate;

use std::sync::Arc;

use serde_json::{Value, json};

use super::Registry;
use super::ResourceType;
use crate::api::status::ApiError;

pub(crate) use validate::validate;

/// `obj` (at `rt`'s version) as served at `target`, another version of the same resource:
/// through the CRD's conversion webhook, or by rewriting `apiVersion` when it has none.
pub(crate) async fn convert_to(
    registry: &Registry,
    rt: &ResourceType,
    mut obj: Value,
    target: &ResourceType,
) -> Result<Value, ApiError> {
    let conv = registry.snapshot().conversion(rt).cloned();
    match conv {
        Some(conv) => review::convert_one(&conv, obj, &target.api_version()).await,
        None => {
            obj["apiVersion"] = json!(target.api_version());
            Ok(obj)
        }
    }
}

/// The conversion review versions this server speaks.
pub(crate) const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Where a CRD's conversion webhook is and which version its objects are stored at.
#[derive(Debug)]
pub(crate) struct Conversion {
    /// The CRD's name (for logs).
    pub crd: String,
    /// `clientConfig.url`, or why there is none that can be called.
    pub url: Result<String, String>,
    /// `clientConfig.caBundle` (base64 of PEM).
    pub ca_bundle: String,
    /// The review version sent: the first of `conversionReviewVersions` this server speaks.
    pub review_version: String,
    /// The resource at the storage version (served or not).
    pub storage: Arc<ResourceType>,
}

impl Conversion {
    /// The conversion of a (validated) CRD with `strategy: Webhook`.
    pub fn of_crd(crd: &Value, storage: Arc<ResourceType>) -> Option<Conversion> {
        if crd.pointer("/spec/conversion/strategy") != Some(&json!("Webhook")) {
            return None;
        }
        let cc = crd
            .pointer("/spec/conversion/webhook/clientConfig")
            .cloned()
            .unwrap_or_default();
        let url = match (cc.get("url").and_then(Value::as_str), cc.get("service")) {
            (Some(u), _) => Ok(u.to_string()),
            (None, Some(svc)) => Err(format!(
                "service {}/{} cannot be reached from ctrl-envtest (no cluster DNS); use clientConfig.url",
                str_at(svc, "/namespace"),
                str_at(svc, "/name")
            )),
            (None, None) => Err("no clientConfig".to_string()),
        };
        let review_version =
            strings(crd.pointer("/spec/conversion/webhook/conversionReviewVersions"))
                .into_iter()
                .find(|v| REVIEW_VERSIONS.contains(&v.as_str()))
                .unwrap_or_else(|| "v1".to_string());
        Some(Conversion {
            crd: crate::api::meta::name(crd).to_string(),
            url,
            ca_bundle: str_at(&cc, "/caBundle").to_string(),
            review_version,
            storage,
        })
    }
}

/// The string at `path` of `v`, or "".
pub(crate) fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// The strings of a JSON array (others skipped); none if `v` is not an array.
pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}
