//! Patches (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): JSON patch (RFC 6902), JSON merge
//! patch (RFC 7386) and strategic merge patch ([`super::strategic`]), decoded and applied in one
//! place so that every path that patches — the PATCH verb, `/scale`, admission (which reviews the
//! patched object) and serving a custom resource at a converted version — enforces the same rules:
//!
//! * a media type outside the accepted set is a 415 naming that set; strategic merge is never
//!   accepted for custom resources (upstream: CRDs have no Go struct tags to merge by);
//! * a body that does not decode is a 400 (`error decoding patch: …`);
//! * a JSON patch of more than [`MAX_JSON_PATCH_OPERATIONS`] operations is a 413;
//! * JSON-patch `copy` operations may add [`JSON_PATCH_MAX_COPY_BYTES`] in all (422 beyond).
//!
//! Server-side apply (`application/apply-patch+yaml`) is not a patch here:
//! [`endpoints::handlers::apply`](crate::endpoints::handlers::apply) owns it.

use serde_json::Value;

use crate::api::status::ApiError;

/// The media types a PATCH of a resource accepts, as listed in a 415.
pub(crate) const ACCEPTED: &str =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// Upstream's `maxJSONPatchOperations`.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Upstream's `JSONPatchMaxCopyBytes`: how much JSON `copy` operations may add to a document.
pub(crate) const JSON_PATCH_MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Where a patch is applied, which decides what it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A built-in kind: all three patch types.
    BuiltIn,
    /// A custom resource: no strategic merge patch (415).
    Custom,
    /// A `/scale` subresource: JSON and merge patch only.
    Scale,
}

impl Target {
    /// A built-in kind or a custom resource, as `custom` says.
    pub(crate) fn of(custom: bool) -> Self {
        if custom { Self::Custom } else { Self::BuiltIn }
    }
}

/// A decoded patch, ready to apply to any number of documents (a retried update applies it
/// again to the newer object).
#[derive(Clone, Debug)]
pub(crate) enum Patch {
    /// RFC 6902, within the operation limit.
    Json(json_patch::Patch),
    /// RFC 7386.
    Merge(Value),
    /// Strategic merge patch of a built-in kind.
    Strategic(Value),
}

impl Patch {
    /// Decodes `body` sent as `media_type` (without parameters) for `target`.
    pub(crate) fn decode(media_type: &str, body: &[u8], target: Target) -> Result<Self, ApiError> {
        Self::decode_noting_duplicates(media_type, body, target).map(|(p, _)| p)
    }

    /// [`Patch::decode`], with the paths of the keys a merge patch gives more than once, which
    /// `?fieldValidation=` reports: found while the body is decoded
    /// ([`api::json`](crate::api::json)), not by decoding it again. Other patch types note none.
    pub(crate) fn decode_noting_duplicates(
        media_type: &str,
        body: &[u8],
        target: Target,
    ) -> Result<(Self, Vec<String>), ApiError> {
        let bad =
            |e: serde_json::Error| ApiError::bad_request(format!("error decoding patch: {e}"));
        match media_type {
            "application/json-patch+json" => {
                let p: json_patch::Patch = serde_json::from_slice(body).map_err(bad)?;
                if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
                    return Err(ApiError::new(
                        413,
                        "RequestEntityTooLarge",
                        format!(
                            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}"
                        ),
                    ));
                }
                Ok((Self::Json(p), Vec::new()))
            }
            "application/merge-patch+json" => {
                let (p, duplicates) = crate::api::json::decode(body).map_err(bad)?;
                Ok((Self::Merge(p), duplicates))
            }
            "application/strategic-merge-patch+json" if target == Target::BuiltIn => Ok((
                Self::Strategic(serde_json::from_slice(body).map_err(bad)?),
                Vec::new(),
            )),
            _ => Err(ApiError::unsupported_media(ACCEPTED)),
        }
    }

    /// Whether applying the patch leaves the top-level field `key` of any object as it was: a
    /// merge patch (RFC 7386) changes only the fields it names, a strategic one too when it
    /// carries no `$` directive at its top level. A JSON patch may change anything.
    pub(crate) fn keeps(&self, key: &str) -> bool {
        match self {
            Self::Json(_) => false,
            Self::Merge(p) => p.as_object().is_some_and(|m| !m.contains_key(key)),
            Self::Strategic(p) => p
                .as_object()
                .is_some_and(|m| !m.contains_key(key) && !m.keys().any(|k| k.starts_with('$'))),
        }
    }

    /// The patched copy of `doc`.
    pub(crate) fn apply(&self, doc: &Value) -> Result<Value, ApiError> {
        self.apply_to(doc.clone())
    }

    /// `doc` patched (a copy the caller no longer needs, so the patch is applied in place).
    pub(crate) fn apply_to(&self, mut doc: Value) -> Result<Value, ApiError> {
        match self {
            Self::Json(p) => patch_json(doc, p),
            Self::Merge(p) => {
                json_patch::merge(&mut doc, p);
                Ok(doc)
            }
            Self::Strategic(p) => super::strategic::apply(&doc, p),
        }
    }
}

/// RFC 6902 with upstream's compatibility rule: `test` of a missing path against `null` passes.
/// `copy` operations may add at most [`JSON_PATCH_MAX_COPY_BYTES`] in all (the size of each
/// copied value as JSON), so a short patch cannot double a document into gigabytes. Mutating
/// webhooks' patches go through here too.
pub(crate) fn apply_json(cur: &Value, p: &json_patch::Patch) -> Result<Value, ApiError> {
    patch_json(cur.clone(), p)
}

/// [`apply_json`] in place, on a copy the caller no longer needs.
fn patch_json(mut doc: Value, p: &json_patch::Patch) -> Result<Value, ApiError> {
    let mut copied = 0usize;
    let rejected = |e: &dyn std::fmt::Display| {
        ApiError::new(
            422,
            "Invalid",
            format!("the server rejected our request due to an error in our request: {e}"),
        )
    };
    for op in &p.0 {
        match op {
            json_patch::PatchOperation::Test(t)
                if t.value.is_null() && doc.pointer(t.path.as_str()).is_none() =>
            {
                continue;
            }
            json_patch::PatchOperation::Copy(c) => {
                copied += doc.pointer(c.from.as_str()).map_or(0, json_size);
                if copied > JSON_PATCH_MAX_COPY_BYTES {
                    return Err(rejected(&format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
                    )));
                }
            }
            _ => {}
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(|e| rejected(&e))?;
    }
    Ok(doc)
}

/// The length of `v` written as compact JSON, without building the text.
fn json_size(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing a Value to a counter cannot fail.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}
