//! Field errors (apimachinery's `pkg/util/validation/field`): a [`Path`] into an object,
//! an [`ErrorList`] of what is wrong where, and the `422 Invalid` denial they make
//! ([`ValidationError::invalid_fields`], Go's `apierrors.NewInvalid(gk, name, errs)`),
//! worded as kube-apiserver words them:
//! `StorageBucket.storage.example.com "b" is invalid: spec.endpoint: Invalid value: "ftp://x": must be an http:// or https:// URL`.

use std::fmt;

use serde_json::Value;

use super::validator::ValidationError;

/// A path to a field: `spec.containers[0].image`, `metadata.labels[app]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// The path of a top-level field (Go's `field.NewPath`).
    pub fn new(name: &str) -> Self {
        Self(name.to_string())
    }

    /// A field below this one (Go's `Child`).
    pub fn child(&self, name: &str) -> Self {
        match self.0.is_empty() {
            true => Self::new(name),
            false => Self(format!("{}.{name}", self.0)),
        }
    }

    /// An element of this list (Go's `Index`).
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    /// An entry of this map (Go's `Key`).
    pub fn key(&self, k: &str) -> Self {
        Self(format!("{}[{k}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field (Go's `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    /// `Required value`.
    Required,
    /// `Invalid value`.
    Invalid,
    /// `Forbidden`.
    Forbidden,
    /// `Duplicate value`.
    Duplicate,
    /// `Unsupported value`.
    NotSupported,
    /// `Too long`.
    TooLong,
}

impl ErrorType {
    /// Upstream's wording.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid => "Invalid value",
            Self::Forbidden => "Forbidden",
            Self::Duplicate => "Duplicate value",
            Self::NotSupported => "Unsupported value",
            Self::TooLong => "Too long",
        }
    }
}

/// One field error (Go's `field.Error`).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub type_: ErrorType,
    /// Where.
    pub field: Path,
    /// The offending value, shown for `Invalid`, `Duplicate` and `Unsupported`.
    pub bad_value: Option<Value>,
    /// Why, for people.
    pub detail: String,
}

impl FieldError {
    fn new(type_: ErrorType, field: &Path, bad_value: Option<Value>, detail: &str) -> Self {
        Self {
            type_,
            field: field.clone(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// Go's `field.Required(path, detail)`.
    pub fn required(field: &Path, detail: &str) -> Self {
        Self::new(ErrorType::Required, field, None, detail)
    }

    /// Go's `field.Invalid(path, value, detail)`.
    pub fn invalid(field: &Path, value: impl Into<Value>, detail: &str) -> Self {
        Self::new(ErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// Go's `field.Forbidden(path, detail)`.
    pub fn forbidden(field: &Path, detail: &str) -> Self {
        Self::new(ErrorType::Forbidden, field, None, detail)
    }

    /// Go's `field.Duplicate(path, value)`.
    pub fn duplicate(field: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// Go's `field.NotSupported(path, value, valid)`: the detail lists the supported values.
    pub fn not_supported(field: &Path, value: impl Into<Value>, valid: &[&str]) -> Self {
        let quoted: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::new(ErrorType::NotSupported, field, Some(value.into()), &detail)
    }
}

impl fmt::Display for FieldError {
    /// Upstream's `Error()`: `<field>: <type>[: <value>][: <detail>]` (strings quoted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.type_.as_str())?;
        if let Some(v) = &self.bad_value {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Field errors (Go's `field.ErrorList`).
pub type ErrorList = Vec<FieldError>;

impl ValidationError {
    /// `422 Invalid` for the object `name` of kind `kind` in `group`, with `errors` (Go's
    /// `apierrors.NewInvalid(schema.GroupKind{group, kind}, name, errs)`): one error is
    /// its own message, several are listed in brackets, repeats once.
    pub fn invalid_fields(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let qualified = match group.is_empty() {
            true => kind.to_string(),
            false => format!("{kind}.{group}"),
        };
        let mut messages: Vec<String> = Vec::new();
        for e in errors {
            let m = e.to_string();
            if !messages.contains(&m) {
                messages.push(m);
            }
        }
        let aggregate = match messages.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        Self::invalid(format!("{qualified} {name:?} is invalid: {aggregate}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_kube_apiservers() {
        let spec = Path::new("spec");
        let e = FieldError::invalid(&spec.child("endpoint"), "ftp://x", "must be an http:// URL");
        assert_eq!(
            e.to_string(),
            r#"spec.endpoint: Invalid value: "ftp://x": must be an http:// URL"#
        );
        let containers = spec.child("template").child("containers").index(0);
        assert_eq!(
            FieldError::required(&containers.child("image"), "").to_string(),
            "spec.template.containers[0].image: Required value"
        );
        assert_eq!(
            FieldError::invalid(&spec.child("size"), 5, "must be at most 3").to_string(),
            "spec.size: Invalid value: 5: must be at most 3"
        );
        let policy = FieldError::not_supported(&spec.child("policy"), "x", &["Allow", "Forbid"]);
        assert_eq!(
            policy.to_string(),
            r#"spec.policy: Unsupported value: "x": supported values: "Allow", "Forbid""#
        );
        let labels = Path::new("metadata").child("labels").key("app");
        assert_eq!(labels.to_string(), "metadata.labels[app]");
    }

    #[test]
    fn new_invalid_aggregates_like_apierrors() {
        let size = FieldError::invalid(&Path::new("spec").child("size"), 5, "must be at most 3");
        let one = ValidationError::invalid_fields(
            "cache.example.com",
            "Memcached",
            "m",
            std::slice::from_ref(&size),
        );
        assert_eq!((one.code, one.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            one.message,
            r#"Memcached.cache.example.com "m" is invalid: spec.size: Invalid value: 5: must be at most 3"#
        );
        let image = FieldError::required(&Path::new("spec").child("image"), "");
        let two = ValidationError::invalid_fields("", "Pod", "p", &[size.clone(), image, size]);
        assert_eq!(
            two.message,
            r#"Pod "p" is invalid: [spec.size: Invalid value: 5: must be at most 3, spec.image: Required value]"#
        );
    }
}
