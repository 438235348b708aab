//! Object-metadata rules shared by every write path
//! (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`,
//! `k8s.io/apiserver/pkg/registry/rest/{create,update}.go`): the typed decoding every body's
//! metadata must pass (`check_types`, called by
//! [`registry::objects::check_type`](crate::registry::objects::check_type) and the patch path),
//! reading and writing metadata fields of a JSON object, uid / creationTimestamp / generateName on
//! create, the fields an update may not change, and when `generation` moves.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Decodes an object's type fields and `metadata` into their typed form, as upstream decodes
/// every body (custom resources included: apiextensions coerces their metadata into
/// `ObjectMeta`), and returns the first type error: `apiVersion` and `kind` must be strings,
/// `metadata` must decode as `ObjectMeta` (`finalizers: "x"`, a numeric `resourceVersion` or
/// `namespace` do not). Callers turn the error into upstream's status: 400 for a body, 422 for
/// the result of a patch. A `metadata` equal to `decoded` (metadata known to decode, as a stored
/// object's does, for an update) is not decoded again.
pub(crate) fn check_types(obj: &Value, decoded: Option<&Value>) -> Result<(), String> {
    for field in ["apiVersion", "kind"] {
        match obj.get(field) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(v) => return Err(format!("{field}: expected a string, got {v}")),
        }
    }
    match obj.get("metadata") {
        // The same value (a caller that knows the metadata is the stored one) or an equal one.
        Some(m) if decoded.is_some_and(|d| std::ptr::eq(d, m) || d == m) => Ok(()),
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(m)) if plainly_typed(m) => Ok(()),
        Some(m) => ObjectMeta::deserialize(m)
            .map(drop)
            .map_err(|e| format!("unable to decode metadata: {e}")),
    }
}

/// Whether metadata decodes as `ObjectMeta` without decoding it: every field is one that takes
/// any string (or null), or `labels` / `annotations` holding strings only, as most bodies'
/// metadata is. Anything else (a timestamp, owner references, managedFields, an unknown field) is
/// left to the typed decode, so this answers yes only where that decode succeeds.
fn plainly_typed(m: &Map<String, Value>) -> bool {
    m.iter().all(|(k, v)| match k.as_str() {
        "name" | "generateName" | "namespace" | "uid" | "resourceVersion" | "selfLink" => {
            matches!(v, Value::String(_) | Value::Null)
        }
        "labels" | "annotations" => match v {
            Value::Null => true,
            Value::Object(o) => o.values().all(Value::is_string),
            _ => false,
        },
        _ => false,
    })
}

/// `metadata.<field>` as a string, if present.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta_field(obj, field)?.as_str()
}

/// `metadata.<field>`, if present (what `obj.pointer("/metadata/<field>")` finds, without the
/// two strings a pointer allocates per token: the write path reads these on every write).
pub(crate) fn meta_field<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get("metadata")?.get(field)
}

pub(crate) fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub(crate) fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

/// The metadata map, created if missing (the object must be a JSON object).
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

pub(crate) fn set_meta(obj: &mut Value, field: &str, v: Value) {
    meta_mut(obj).insert(field.to_string(), v);
}

pub(crate) fn remove_meta(obj: &mut Value, field: &str) {
    meta_mut(obj).remove(field);
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Empty lists/maps that upstream stores as absent.
pub(crate) fn normalize(obj: &mut Value) {
    let m = meta_mut(obj);
    for f in [
        "finalizers",
        "ownerReferences",
        "labels",
        "annotations",
        "managedFields",
    ] {
        let empty = match m.get(f) {
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(o)) => o.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            m.remove(f);
        }
    }
}

/// RFC 3339, second precision, `Z`. The text of the current second is kept per thread, since
/// every write asks (a create twice: creationTimestamp, its managedFields entry).
pub(crate) fn now() -> String {
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let t = ctrl_clock::now();
    let second = t.as_second();
    LAST.with_borrow_mut(|(at, text)| {
        if *at != second {
            *text = t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            *at = second;
        }
        text.clone()
    })
}

/// Sets the server-owned fields of a new object.
pub(crate) fn init_create(obj: &mut Value, generation: bool) {
    let m = meta_mut(obj);
    // One pass over the few fields a new object's metadata has, not a search per field.
    m.retain(|k, _| {
        !matches!(
            k.as_str(),
            "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "resourceVersion"
                | "selfLink"
                | "managedFields"
                | "generation"
        )
    });
    m.insert("uid".into(), json!(new_uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    if generation {
        m.insert("generation".into(), json!(1));
    }
}

/// Restores the fields an update may not touch from the stored object.
pub(crate) fn keep_immutable(new: &mut Value, old: &Value) {
    let om = old.get("metadata").unwrap_or(&Value::Null);
    let nm = meta_mut(new);
    for f in [
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        match om.get(f) {
            // Most writes carry the stored value already: nothing to copy.
            Some(v) if nm.get(f) == Some(v) => {}
            Some(v) => {
                nm.insert(f.into(), v.clone());
            }
            None => {
                nm.remove(f);
            }
        }
    }
}

/// Whether anything outside `metadata` (and `status`, when `skip_status`) differs.
pub(crate) fn spec_changed(a: &Value, b: &Value, skip_status: bool) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a != b;
    };
    let ignored = |k: &str| {
        k == "metadata" || (skip_status && k == "status") || k == "apiVersion" || k == "kind"
    };
    let ka = a.iter().filter(|(k, _)| !ignored(k)).count();
    let kb = b.iter().filter(|(k, _)| !ignored(k)).count();
    ka != kb
        || a.iter()
            .filter(|(k, _)| !ignored(k))
            .any(|(k, v)| b.get(k) != Some(v))
}

pub(crate) fn generation(obj: &Value) -> i64 {
    obj.get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// A new random (version 4) UID, drawn from `ctrl_clock`'s random numbers: seeded in a
/// simulation, so object UIDs replay with the seed.
pub(crate) fn new_uid() -> String {
    let uid = uuid::Builder::from_random_bytes(ctrl_clock::random_u128().to_le_bytes()).into_uuid();
    // Encoded on the stack, then copied: `to_string` would go through `fmt` (every create makes
    // one).
    let mut buf = uuid::Uuid::encode_buffer();
    uid.hyphenated().encode_lower(&mut buf).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut says yes only where the typed decode succeeds, and the typed decode still
    /// refuses what it says no to.
    #[test]
    fn plainly_typed_metadata_is_metadata_that_decodes() {
        let plain = [
            json!({"name": "a", "namespace": "default"}),
            json!({"generateName": "a-", "uid": null, "labels": {"app": "x"}}),
            json!({"name": "a", "annotations": {}, "labels": null, "resourceVersion": "7"}),
        ];
        for m in plain {
            let map = m.as_object().expect("object");
            assert!(plainly_typed(map), "{m}");
            assert!(ObjectMeta::deserialize(&m).is_ok(), "{m}");
        }
        let left_to_the_decode = [
            json!({"name": 5}),
            json!({"labels": {"app": 1}}),
            json!({"labels": {"app": null}}),
            json!({"annotations": ["a"]}),
            json!({"name": "a", "finalizers": "x"}),
            json!({"name": "a", "creationTimestamp": "yesterday"}),
        ];
        for m in left_to_the_decode {
            let map = m.as_object().expect("object");
            assert!(!plainly_typed(map), "{m}");
            let obj = json!({"metadata": m});
            assert!(check_types(&obj, None).is_err(), "{obj}");
        }
        // Known to decode, but not by the shortcut: the typed decode still answers.
        let obj = json!({"metadata": {"name": "a", "finalizers": ["f"]}});
        assert!(check_types(&obj, None).is_ok());
    }
}
