//! Field validation of a create, update or patch body (`?fieldValidation=`, upstream's
//! `metav1.FieldValidation*`): unknown fields of custom resources (what the CRD schema's pruning
//! would drop, `schema::prune`) and duplicate fields in a JSON body. `Strict` fails with 400
//! `strict decoding error: unknown field "spec.x", duplicate field "spec.y"`; `Warn` (the default,
//! as upstream) answers each as a `Warning` header
//! ([`endpoints::Warnings`](crate::endpoints::Warnings)); `Ignore` says nothing. The write itself
//! then prunes as before
//! ([`registry::crd::validate_custom`](crate::registry::crd::validate_custom)). Built-in types are
//! checked for duplicates only: their unknown fields are dropped by their decoder without a trace.
//! A write to a multi-version CRD at a non-storage version is pruned by the conversion layer
//! ([`super::versioned`]) before it reaches the verbs, so there `Warn` says nothing (`Strict` still
//! fails).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::api::status::ApiError;
use crate::endpoints::Req;
use crate::registry::ResourceType;

/// `?fieldValidation=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Ignore,
    Warn,
    Strict,
}

/// The mode the request asks for (`Warn` when unset).
pub(crate) fn mode(req: &Req) -> Result<Mode, ApiError> {
    match req.query.value("fieldValidation") {
        None | Some("Warn") => Ok(Mode::Warn),
        Some("Ignore") => Ok(Mode::Ignore),
        Some("Strict") => Ok(Mode::Strict),
        Some(v) => Err(ApiError::bad_request(format!(
            "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {v:?}"
        ))),
    }
}

/// Checks `obj` (the decoded body, or the patched object, at `rt`'s version) and the raw
/// body of `req` by the request's mode.
pub(crate) fn check(rt: &ResourceType, obj: &Value, req: &Req) -> Result<(), ApiError> {
    check_with(rt, obj, req, true)
}

/// Checks `obj`, an object that is not the request's body (one an admission webhook returned),
/// by the request's mode: unknown fields only.
pub(crate) fn check_object(rt: &ResourceType, obj: &Value, req: &Req) -> Result<(), ApiError> {
    check_with(rt, obj, req, false)
}

fn check_with(rt: &ResourceType, obj: &Value, req: &Req, body: bool) -> Result<(), ApiError> {
    let mode = mode(req)?;
    if mode == Mode::Ignore {
        return Ok(());
    }
    let mut problems: Vec<String> = unknown_fields(rt, obj)
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    if body && is_json(req) {
        problems.extend(
            duplicate_fields(&req.body)
                .iter()
                .map(|f| format!("duplicate field {f:?}")),
        );
    }
    if problems.is_empty() {
        return Ok(());
    }
    if mode == Mode::Strict {
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            problems.join(", ")
        )));
    }
    for p in &problems {
        req.warnings.add(p);
    }
    Ok(())
}

fn is_json(req: &Req) -> bool {
    matches!(
        req.media_type(),
        "" | "application/json" | "application/merge-patch+json" | "*/*"
    )
}

/// The fields of a custom object its schema does not know.
fn unknown_fields(rt: &ResourceType, obj: &Value) -> Vec<String> {
    match (&rt.crd, &rt.schema) {
        (Some(_), Some(sch)) => crate::registry::schema::unknown_fields(sch, obj),
        _ => Vec::new(),
    }
}

/// The paths (`spec.a`, `spec.list[0].b`) of keys given twice in a JSON body; empty when the
/// body is not JSON (the decoder reports that).
pub(crate) fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let walk = Walk {
        path: String::new(),
        found: &found,
    };
    if walk.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

/// Walks a JSON value, recording duplicate keys under their path.
struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl Walk<'_> {
    fn at(&self, path: String) -> Self {
        Walk {
            path,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(self.at(path))?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(self.at(format!("{}[{i}]", self.path)))?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_with_their_paths() {
        let body =
            br#"{"spec": {"a": 1, "a": 2, "l": [{"b": 1, "b": {}}]}, "kind": "X", "kind": "X"}"#;
        assert_eq!(
            duplicate_fields(body),
            vec!["spec.a", "spec.l[0].b", "kind"]
        );
        assert!(duplicate_fields(br#"{"a": {"a": 1}}"#).is_empty());
        assert!(duplicate_fields(b"not json").is_empty());
    }
}
