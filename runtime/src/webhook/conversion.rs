//! CRD conversion webhooks (controller-runtime's `pkg/webhook/conversion`): the
//! `/convert` handler for `apiextensions.k8s.io/v1` `ConversionReview`s, with
//! hub-and-spoke conversion.
//!
//! One version of a kind is the [`Hub`]; every other version is [`Convertible`] to
//! and from it, so `n` versions need `n - 1` conversions. A [`Webhook`] holds the
//! conversions of any number of kinds; the webhook server (`super::Server`) keeps one
//! at `/convert` ([`super::Server::conversion`]). Per the API, a failed conversion is
//! a review whose `result.status` is `Failure` with the reason; input that is not a
//! review is an HTTP `400`. A panicking conversion is a failed review too, counted in
//! `controller_runtime_conversion_webhook_panics_total`.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::Full;
use kube::Resource;
use parking_lot::RwLock;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::http as h;

/// A conversion error: its message is the review's `result.message`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ConversionError(pub String);

impl From<&str> for ConversionError {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<String> for ConversionError {
    fn from(s: String) -> Self {
        Self(s)
    }
}

/// The version every other version converts through (Go's `conversion.Hub`).
pub trait Hub:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// A version that converts to and from its hub `H` (Go's `conversion.Convertible`).
pub trait Convertible<H: Hub>:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// This object as the hub version.
    fn convert_to(&self) -> Result<H, ConversionError>;
    /// The hub object as this version.
    fn convert_from(hub: &H) -> Result<Self, ConversionError>;
}

type Conv = Arc<dyn Fn(Value) -> Result<Value, ConversionError> + Send + Sync>;

#[derive(Default, Clone)]
struct Kind {
    hub_version: String,
    resource: String,
    to_hub: HashMap<String, Conv>,
    from_hub: HashMap<String, Conv>,
}

/// The conversions of any number of kinds, served as one handler (Go's
/// `conversion.NewWebhookHandler(scheme)`). Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct Webhook {
    kinds: Arc<RwLock<HashMap<(String, String), Kind>>>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("conversion::Webhook")
            .field("kinds", &self.kinds.read().keys().collect::<Vec<_>>())
            .finish()
    }
}

fn typed<K>(obj: &K) -> Result<Value, ConversionError>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let mut v = serde_json::to_value(obj).map_err(|e| ConversionError(e.to_string()))?;
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), K::api_version(&()).into());
        m.insert("kind".into(), K::kind(&()).into());
    }
    Ok(v)
}

fn decode<K: DeserializeOwned>(v: Value) -> Result<K, ConversionError> {
    serde_json::from_value(v).map_err(|e| ConversionError(format!("decoding the object: {e}")))
}

impl Webhook {
    /// No conversions yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn kind_mut<H: Hub>(&self, f: impl FnOnce(&mut Kind)) {
        let key = (H::group(&()).to_string(), H::kind(&()).to_string());
        let mut kinds = self.kinds.write();
        let k = kinds.entry(key).or_default();
        if k.hub_version.is_empty() {
            k.hub_version = H::api_version(&()).to_string();
            k.resource = H::plural(&()).to_string();
            let id: Conv = Arc::new(|v| typed(&decode::<H>(v)?));
            k.to_hub.insert(k.hub_version.clone(), id.clone());
            k.from_hub.insert(k.hub_version.clone(), id);
        }
        f(k);
    }

    /// Makes `H` the hub of its kind.
    pub fn hub<H: Hub>(&self) -> &Self {
        self.kind_mut::<H>(|_| {});
        self
    }

    /// Adds spoke `S` of hub `H`.
    pub fn spoke<H: Hub, S: Convertible<H>>(&self) -> &Self {
        self.kind_mut::<H>(|k| {
            let av = S::api_version(&()).to_string();
            k.to_hub.insert(
                av.clone(),
                Arc::new(|v| typed(&decode::<S>(v)?.convert_to()?)),
            );
            k.from_hub
                .insert(av, Arc::new(|v| typed(&S::convert_from(&decode::<H>(v)?)?)));
        });
        self
    }

    /// What this webhook converts, served at `path` (the server's `/convert`): one
    /// [`Registration`](super::Registration) per kind, version the hub's.
    pub fn registrations(&self, path: &str) -> Vec<super::Registration> {
        self.kinds
            .read()
            .iter()
            .map(|((group, kind), k)| super::Registration {
                webhook_type: super::WebhookType::Conversion,
                path: path.into(),
                group: group.clone(),
                version: k.hub_version.rsplit('/').next().unwrap_or_default().into(),
                kind: kind.clone(),
                resource: k.resource.clone(),
                operations: Vec::new(),
            })
            .collect()
    }

    /// Whether the kind `group`/`kind` has conversions.
    pub fn is_convertible(&self, group: &str, kind: &str) -> bool {
        self.kinds
            .read()
            .contains_key(&(group.to_string(), kind.to_string()))
    }

    /// Converts one object to `desired_api_version` (Go's `convertObject`).
    pub fn convert(&self, obj: Value, desired_api_version: &str) -> Result<Value, ConversionError> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or("object has no apiVersion")?
            .to_string();
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("object has no kind")?
            .to_string();
        if api_version == desired_api_version {
            return Err(
                format!("conversion is not needed: the object is already {api_version}").into(),
            );
        }
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let desired_group = desired_api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("");
        if group != desired_group {
            return Err(format!(
                "cannot convert {api_version} to another group's {desired_api_version}"
            )
            .into());
        }
        let conv = {
            let kinds = self.kinds.read();
            let k = kinds
                .get(&(group.to_string(), kind.clone()))
                .ok_or_else(|| ConversionError(format!("{kind}.{group} is not convertible")))?;
            let to = k.to_hub.get(&api_version).cloned().ok_or_else(|| {
                ConversionError(format!(
                    "{api_version} {kind} is not convertible to the hub"
                ))
            })?;
            let from = k
                .from_hub
                .get(desired_api_version)
                .cloned()
                .ok_or_else(|| {
                    ConversionError(format!(
                        "{desired_api_version} {kind} is not convertible from the hub"
                    ))
                })?;
            (to, from)
        };
        (conv.1)((conv.0)(obj)?)
    }

    /// Answers one decoded `ConversionReview` (`request` present).
    pub fn review(&self, request: &Value) -> Value {
        let uid = request
            .get("uid")
            .cloned()
            .unwrap_or(Value::String(String::new()));
        let desired = request
            .get("desiredAPIVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let objects = request
            .get("objects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut converted = Vec::with_capacity(objects.len());
        for obj in objects {
            match self.convert(obj, desired) {
                Ok(v) => converted.push(v),
                Err(e) => {
                    tracing::error!(error = %e, desired, "conversion failed");
                    return json!({
                        "uid": uid,
                        "convertedObjects": [],
                        "result": {"status": "Failure", "message": e.0},
                    });
                }
            }
        }
        json!({
            "uid": uid,
            "convertedObjects": converted,
            "result": {"status": "Success"},
        })
    }
}

impl Webhook {
    /// [`Webhook::review`], with a panicking conversion counted in
    /// `controller_runtime_conversion_webhook_panics_total` and answered as a failed
    /// review (`panic: … [recovered]`), as Go's conversion webhook recovers.
    fn review_recovering(&self, request: &Value) -> Value {
        let run = std::panic::AssertUnwindSafe(|| self.review(request));
        match std::panic::catch_unwind(run) {
            Ok(response) => response,
            Err(payload) => {
                super::metrics::conversion_panic_observed();
                let what = crate::error::panic_message(&*payload);
                tracing::error!(panic = %what, "panic in conversion webhook");
                json!({
                    "uid": request.get("uid").cloned().unwrap_or(Value::String(String::new())),
                    "convertedObjects": [],
                    "result": {"status": "Failure", "message": format!("panic: {what} [recovered]")},
                })
            }
        }
    }
}

fn json_reply(status: StatusCode, body: &Value) -> h::Response {
    let mut r = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[async_trait]
impl h::Handler for Webhook {
    async fn call(&self, req: h::Request) -> h::Response {
        if req.method() != http::Method::POST {
            return h::text(StatusCode::METHOD_NOT_ALLOWED, "only POST is allowed\n");
        }
        let review: Value = match serde_json::from_slice(req.body()) {
            Ok(v) => v,
            Err(e) => {
                return h::text(
                    StatusCode::BAD_REQUEST,
                    format!("couldn't decode the ConversionReview: {e}\n"),
                );
            }
        };
        if review.get("kind").and_then(Value::as_str) != Some("ConversionReview") {
            return h::text(StatusCode::BAD_REQUEST, "expected a ConversionReview\n");
        }
        let Some(request) = review.get("request").filter(|r| r.is_object()) else {
            return h::text(StatusCode::BAD_REQUEST, "conversion request is nil\n");
        };
        let response = self.review_recovering(request);
        let api_version = review
            .get("apiVersion")
            .cloned()
            .unwrap_or_else(|| "apiextensions.k8s.io/v1".into());
        json_reply(
            StatusCode::OK,
            &json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response}),
        )
    }
}
