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

/// A `Status` object's JSON as Go's encoder writes it (`encoding/json` on `metav1.Status`, as
/// kube-apiserver's JSON serializer does), so clients that compare error bodies see the same
/// bytes: the struct's field order (`kind, apiVersion, metadata, status, message, reason,
/// details, code`; `details` as `name, group, kind, uid, causes, retryAfterSeconds`; a cause as
/// `reason, message, field`), empty fields left out, `<`, `>`, `&`, U+2028 and U+2029 escaped
/// and a trailing newline.
pub(crate) fn render(v: &Value) -> Vec<u8> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let status = GoStatus {
        kind: s("kind").unwrap_or("Status"),
        api_version: s("apiVersion").unwrap_or("v1"),
        metadata: GoListMeta::of(v.get("metadata")),
        status: s("status"),
        message: s("message"),
        reason: s("reason"),
        details: v
            .get("details")
            .filter(|d| d.is_object())
            .map(GoDetails::of),
        code: v.get("code").and_then(Value::as_i64).filter(|c| *c != 0),
    };
    let text = serde_json::to_string(&status).unwrap_or_default();
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('\n');
    out.into_bytes()
}

/// `metav1.Status` in its Go field order.
#[derive(serde::Serialize)]
struct GoStatus<'a> {
    kind: &'a str,
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    metadata: GoListMeta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<GoDetails<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<i64>,
}

/// `metav1.ListMeta` in its Go field order.
#[derive(serde::Serialize)]
struct GoListMeta<'a> {
    #[serde(rename = "selfLink", skip_serializing_if = "Option::is_none")]
    self_link: Option<&'a Value>,
    #[serde(rename = "resourceVersion", skip_serializing_if = "Option::is_none")]
    resource_version: Option<&'a Value>,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    cont: Option<&'a Value>,
    #[serde(rename = "remainingItemCount", skip_serializing_if = "Option::is_none")]
    remaining: Option<&'a Value>,
}

impl<'a> GoListMeta<'a> {
    fn of(m: Option<&'a Value>) -> Self {
        let f = |k: &str| m.and_then(|m| m.get(k)).filter(|v| !v.is_null());
        GoListMeta {
            self_link: f("selfLink"),
            resource_version: f("resourceVersion"),
            cont: f("continue"),
            remaining: f("remainingItemCount"),
        }
    }
}

/// `metav1.StatusDetails` in its Go field order.
#[derive(serde::Serialize)]
struct GoDetails<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    causes: Vec<GoCause<'a>>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    retry_after: Option<i64>,
}

impl<'a> GoDetails<'a> {
    fn of(d: &'a Value) -> Self {
        let s = |k: &str| d.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let causes = d.get("causes").and_then(Value::as_array);
        GoDetails {
            name: s("name"),
            group: s("group"),
            kind: s("kind"),
            uid: s("uid"),
            causes: causes.into_iter().flatten().map(GoCause::of).collect(),
            retry_after: d
                .get("retryAfterSeconds")
                .and_then(Value::as_i64)
                .filter(|n| *n != 0),
        }
    }
}

/// `metav1.StatusCause` in its Go field order.
#[derive(serde::Serialize)]
struct GoCause<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl<'a> GoCause<'a> {
    fn of(c: &'a Value) -> Self {
        let s = |k: &str| c.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        GoCause {
            reason: s("reason"),
            message: s("message"),
            field: s("field"),
        }
    }
}
