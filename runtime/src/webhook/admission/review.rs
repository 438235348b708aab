//! The `admission.k8s.io/v1` wire types: [`AdmissionReview`], [`Request`] and
//! [`Response`] (Go's `admission.Request` / `admission.Response`).
//!
//! Our own structs rather than kube's, so that the JSON patch goes out base64
//! encoded as Go's encoder writes it (kube's serializes it as an array of numbers)
//! and objects stay raw JSON until a typed handler decodes them.

use base64::Engine;
use k8s_openapi::api::authentication::v1::UserInfo;
use kube::core::{GroupVersionKind, GroupVersionResource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `admission.k8s.io/v1`.
pub const API_VERSION: &str = "admission.k8s.io/v1";
/// `AdmissionReview`.
pub const KIND: &str = "AdmissionReview";

/// The envelope the API server posts and the webhook answers with.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `AdmissionReview`.
    #[serde(default)]
    pub kind: String,
    /// The question (incoming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    /// The answer (outgoing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Response>,
}

impl AdmissionReview {
    /// A review carrying `response`.
    pub fn answer(response: Response) -> Self {
        Self {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            request: None,
            response: Some(response),
        }
    }
}

/// The operation being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT`.
    Connect,
}

impl Operation {
    /// The wire name (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// One admission request: the request context every handler sees (who, what
/// operation, dry run) plus the raw objects.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// Identifies this call; echoed in the response.
    pub uid: String,
    /// The kind of `object` as sent.
    pub kind: GroupVersionKind,
    /// The resource being admitted.
    pub resource: GroupVersionResource,
    /// The subresource, if any (`status`, `scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    /// The kind of the original request, if converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource of the original request, if converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource of the original request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// The object's name (may be empty on create with `generateName`).
    #[serde(default)]
    pub name: String,
    /// The object's namespace, if namespaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The operation.
    pub operation: Operation,
    /// Who asked.
    #[serde(default)]
    pub user_info: UserInfo,
    /// The new object (create, update); `None` on delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The existing object (update, delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// Whether the write is a dry run (nothing persists; side effects must not happen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The operation's options (`CreateOptions`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

impl Request {
    /// A request to admit `obj` with `operation`, as an API server would send it for
    /// `K` (kind, resource, name, namespace, the object): for calling a
    /// `CustomDefaulter` or `CustomValidator` directly in a unit test. Add the object
    /// being replaced with [`Request::with_old_object`].
    ///
    /// ```
    /// use ctrl_runtime::webhook::admission::{Operation, Request};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("settings".into());
    /// cm.metadata.namespace = Some("default".into());
    /// let req = Request::for_object(Operation::Create, &cm).expect("serializable");
    /// assert_eq!((req.kind.kind.as_str(), req.resource.resource.as_str()), ("ConfigMap", "configmaps"));
    /// assert_eq!((req.name.as_str(), req.namespace.as_deref()), ("settings", Some("default")));
    /// ```
    pub fn for_object<K>(operation: Operation, obj: &K) -> Result<Self, serde_json::Error>
    where
        K: kube::Resource<DynamicType = ()> + Serialize,
    {
        let (group, version) = (K::group(&()), K::version(&()));
        let meta = obj.meta();
        // As kube-apiserver sends them: the object on create and update, the old one
        // (only) on delete.
        let value = serde_json::to_value(obj)?;
        let delete = operation == Operation::Delete;
        Ok(Self {
            uid: uuid::Uuid::new_v4().to_string(),
            kind: GroupVersionKind::gvk(&group, &version, &K::kind(&())),
            resource: GroupVersionResource::gvr(&group, &version, &K::plural(&())),
            sub_resource: None,
            request_kind: None,
            request_resource: None,
            request_sub_resource: None,
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            operation,
            user_info: UserInfo::default(),
            object: (!delete).then(|| value.clone()),
            old_object: delete.then_some(value),
            dry_run: None,
            options: None,
        })
    }

    /// This request with `old` as the object being replaced or deleted.
    pub fn with_old_object<K: Serialize>(mut self, old: &K) -> Result<Self, serde_json::Error> {
        self.old_object = Some(serde_json::to_value(old)?);
        Ok(self)
    }

    /// Whether this is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.unwrap_or(false)
    }
}

/// The `status` of a response: Kubernetes' `metav1.Status` subset admission uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultStatus {
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Shown to the user when denied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason (`Forbidden`, `Invalid`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The HTTP code the API server returns to its client.
    #[serde(default)]
    pub code: u16,
}

/// A handler's answer (Go's `admission.Response`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// The request's uid (filled in by the webhook).
    #[serde(default)]
    pub uid: String,
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Why (set on denials and errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResultStatus>,
    /// A base64 JSON patch (RFC 6902) to apply to the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// `JSONPatch` when `patch` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Annotations for the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_annotations: Option<std::collections::BTreeMap<String, String>>,
    /// Warnings shown to the client (`Warning:` headers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Response {
    /// Admits the request (Go's `admission.Allowed`).
    pub fn allowed(message: impl Into<String>) -> Self {
        Self::with_result(true, 200, "", message.into())
    }

    /// Denies it with `403 Forbidden` (Go's `admission.Denied`).
    pub fn denied(message: impl Into<String>) -> Self {
        Self::with_result(false, 403, "Forbidden", message.into())
    }

    /// Denies it with `code` and `reason` (Go's `ValidationResponse(false, ..)` with a status).
    pub fn denied_with(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self::with_result(false, code, &reason.into(), message.into())
    }

    /// Denies it because the webhook failed (Go's `admission.Errored`): `code` is
    /// 400 for bad input, 500 for a handler failure.
    pub fn errored(code: u16, message: impl Into<String>) -> Self {
        Self::with_result(false, code, "", message.into())
    }

    fn with_result(allowed: bool, code: u16, reason: &str, message: String) -> Self {
        Self {
            allowed,
            status: Some(ResultStatus {
                status: if allowed { "Success" } else { "Failure" }.into(),
                message,
                reason: reason.to_string(),
                code,
            }),
            ..Self::default()
        }
    }

    /// Admits the request with `patch` (Go's `admission.Patched` / `PatchResponseFromRaw`);
    /// an empty patch admits without one.
    pub fn patched(patch: &json_patch::Patch) -> Self {
        let mut r = Self::allowed("");
        if patch.0.is_empty() {
            return r;
        }
        match serde_json::to_vec(patch) {
            Ok(bytes) => {
                r.patch = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
                r.patch_type = Some("JSONPatch".into());
                r
            }
            Err(e) => Self::errored(500, format!("encoding the patch: {e}")),
        }
    }

    /// Adds warnings (Go's `WithWarnings`).
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The decoded JSON patch, if any (for callers such as the API server).
    pub fn decoded_patch(&self) -> Result<Option<json_patch::Patch>, String> {
        let Some(p) = &self.patch else {
            return Ok(None);
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(p)
            .map_err(|e| format!("patch is not base64: {e}"))?;
        serde_json::from_slice(&raw)
            .map(Some)
            .map_err(|e| format!("patch is not a JSON patch: {e}"))
    }

    /// The denial message, if any.
    pub fn message(&self) -> &str {
        self.status
            .as_ref()
            .map(|s| s.message.as_str())
            .unwrap_or("")
    }
}
