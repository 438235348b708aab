//! The data of a CRD's webhook conversion ([`Conversion`]): where the webhook is and which
//! version objects are stored at. The registry keeps one per CRD with `strategy: Webhook`;
//! calling the webhook is the `conversion` module's (above the registry).

use std::sync::Arc;

use serde_json::{Value, json};

use super::ResourceType;

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
