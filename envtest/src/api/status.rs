//! Part of `api` (layer 0): calls nothing above it.
//!
//! Error responses: every failure of an API request becomes an [`ApiError`], which the server turns
//! into a Kubernetes `Status` body (`k8s.io/apimachinery/pkg/api/errors/errors.go`). Verbs, the
//! router and the store all return `ApiError`; nothing in the request path panics or answers plain
//! text.

use serde_json::{Value, json};

use crate::api::validation::{self, FieldCause};

/// The request body limit (upstream's 3 MiB): the server enforces it, [`ApiError::too_large`]
/// names it.
pub(crate) const BODY_LIMIT: usize = 3 * 1024 * 1024;

/// A failed API request, rendered as a `Status` object with the HTTP code `code`.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `<res>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(details(group, plural, name))
    }

    pub fn unknown_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(details(group, plural, name))
    }

    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(group, plural)
            ),
        )
        .with_details(details(group, plural, name))
    }

    /// 422 Invalid with field causes (details.kind is the Kind, as upstream).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[FieldCause]) -> Self {
        let v = validation::invalid_status(kind, group, name, causes);
        let message = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("invalid object")
            .to_string();
        let mut e = Self::new(422, "Invalid", message);
        e.details = v.get("details").cloned();
        e
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub fn unsupported_media(accepted: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ),
        )
    }

    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {}", BODY_LIMIT),
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
    }

    /// The `Status` object for this error.
    pub fn to_value(&self) -> Value {
        let mut v = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

/// `plural` or `plural.group`, as upstream messages name a resource.
pub(crate) fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn details(group: &str, plural: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": plural});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

/// A `Status` of success, as DELETE answers when the object is gone.
pub(crate) fn success(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    let mut d = details(group, plural, name);
    d["uid"] = json!(uid);
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}
