//! A decoded protobuf message ([`DynamicMessage`]) to the JSON a JSON body of the same Go object
//! has: fields under their JSON names ([`schema::json_name`]), embedded structs inlined,
//! special types in their own JSON form, bytes as base64, maps as objects.
//!
//! Presence: Go's encoder writes every non-pointer field, set or not, so an empty list or map and
//! a zero `Time` mean "unset" and are left out (as Go's `omitempty` JSON leaves them out). A
//! zero scalar (`""`, `0`, `false`) is kept where Go's JSON keeps it — Go pointers (`replicas:
//! 0`) and fields without `omitempty` — and left out elsewhere, by `schema::keeps_zero` (the
//! presence table of `k8s.io/api`'s types and of the `meta/v1` messages they embed); in messages the table does not cover, empty strings
//! are left out and zero numbers and booleans kept. Messages that are present are kept even
//! when empty, as Go's JSON writes `status: {}` for a non-pointer struct.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use prost_reflect::{DynamicMessage, MapKey, ReflectMessage, Value as P};
use serde_json::{Map, Value, json};

use super::gotime;
use super::schema::{self, Special};

/// The JSON object of `m` (without `kind` / `apiVersion`, which the envelope carries).
pub(super) fn message(m: &DynamicMessage) -> Option<Value> {
    if let Some(s) = schema::special(&m.descriptor()) {
        return special(s, m);
    }
    let mut out = Map::new();
    fields_into(m, &mut out);
    Some(Value::Object(out))
}

fn fields_into(m: &DynamicMessage, out: &mut Map<String, Value>) {
    for f in m.descriptor().fields() {
        if !m.has_field(&f) {
            continue;
        }
        let v = m.get_field(&f);
        if schema::inline(&f) {
            if let P::Message(inner) = &*v {
                fields_into(inner, out);
            }
            continue;
        }
        let json = match &*v {
            P::List(items) => list(items),
            P::Map(entries) => map(entries),
            single if is_zero(single) => match schema::keeps_zero(&f) {
                Some(true) => zero(single),
                Some(false) => None,
                None => scalar(single),
            },
            single => scalar(single),
        };
        if let Some(j) = json {
            out.insert(schema::json_name(&f).into_owned(), j);
        }
    }
}

/// `""`, `0`, `false` or empty bytes.
fn is_zero(v: &P) -> bool {
    match v {
        P::String(s) => s.is_empty(),
        P::Bytes(b) => b.is_empty(),
        P::Bool(b) => !b,
        P::I32(n) => *n == 0,
        P::I64(n) => *n == 0,
        P::U32(n) => *n == 0,
        P::U64(n) => *n == 0,
        P::F32(n) => *n == 0.0,
        P::F64(n) => *n == 0.0,
        _ => false,
    }
}

/// The JSON of a zero scalar that is kept.
fn zero(v: &P) -> Option<Value> {
    match v {
        P::String(_) | P::Bytes(_) => Some(json!("")),
        other => scalar(other),
    }
}

fn list(items: &[P]) -> Option<Value> {
    // A list element is written even when empty (`apiGroups: [""]`, the core group).
    let out: Vec<Value> = items
        .iter()
        .map(|x| match x {
            P::String(s) => json!(s),
            other => scalar(other).unwrap_or(Value::Null),
        })
        .collect();
    (!out.is_empty()).then_some(Value::Array(out))
}

fn map(entries: &std::collections::HashMap<MapKey, P>) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in entries {
        let key = match k {
            MapKey::String(s) => s.clone(),
            other => format!("{other:?}"),
        };
        // A map value is written even when empty (`""`), as Go writes it.
        let value = match v {
            P::String(s) => json!(s),
            P::Bytes(b) => json!(B64.encode(b)),
            _ => scalar(v).unwrap_or(Value::Null),
        };
        out.insert(key, value);
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn scalar(v: &P) -> Option<Value> {
    Some(match v {
        P::String(s) if s.is_empty() => return None,
        P::String(s) => json!(s),
        P::Bytes(b) if b.is_empty() => return None,
        P::Bytes(b) => json!(B64.encode(b)),
        P::Bool(b) => json!(b),
        P::I32(n) => json!(n),
        P::I64(n) => json!(n),
        P::U32(n) => json!(n),
        P::U64(n) => json!(n),
        P::F32(n) => json!(n),
        P::F64(n) => json!(n),
        P::EnumNumber(n) => json!(n),
        P::Message(m) => return message(m),
        P::List(items) => return list(items),
        P::Map(_) => return None,
    })
}

/// A field of a special message by number, if present.
fn field(m: &DynamicMessage, number: u32) -> Option<P> {
    m.has_field_by_number(number)
        .then(|| m.get_field_by_number(number).map(|v| v.into_owned()))
        .flatten()
}

fn special(s: Special, m: &DynamicMessage) -> Option<Value> {
    let int = |n: u32| field(m, n).and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
    match s {
        Special::Time | Special::MicroTime => {
            let seconds = int(1);
            let nanos = int(2).unwrap_or(0) as i32;
            match seconds {
                None if nanos == 0 => None,
                Some(gotime::GO_ZERO) if nanos == 0 => None,
                sec => gotime::format_time(sec.unwrap_or(0), nanos, s == Special::MicroTime)
                    .map(Value::String),
            }
        }
        Special::Duration => Some(json!(gotime::format_duration(int(1).unwrap_or(0)))),
        Special::Quantity => field(m, 1).and_then(|v| v.as_str().map(|s| json!(s))),
        Special::IntOrString => match int(1).unwrap_or(0) {
            1 => Some(json!(
                field(m, 3).and_then(|v| v.as_str().map(String::from))
            )),
            _ => Some(json!(int(2).unwrap_or(0))),
        },
        Special::RawJson => {
            let raw = field(m, 1)?;
            raw_json(raw.as_bytes()?)
        }
        Special::OrArray | Special::OrBool | Special::OrStringArray => either(s, m),
        Special::Slice => {
            let items = field(m, 1);
            Some(items.and_then(|v| scalar(&v)).unwrap_or_else(|| json!([])))
        }
    }
}

/// The schema-or-something types of apiextensions: the schema when set, else the other form.
fn either(s: Special, m: &DynamicMessage) -> Option<Value> {
    let (schema_field, other) = match s {
        Special::OrBool => (2, 1),
        _ => (1, 2),
    };
    if let Some(P::Message(schema)) = field(m, schema_field) {
        return message(&schema);
    }
    match (s, field(m, other)) {
        (Special::OrBool, v) => Some(json!(v.and_then(|v| v.as_bool()).unwrap_or(false))),
        (_, Some(P::List(items))) => list(&items),
        _ => None,
    }
}

/// Embedded bytes that are JSON (what a JSON client wrote) or, from a protobuf client, a
/// Kubernetes protobuf object (`k8s\0` + `runtime.Unknown`), decoded to JSON.
fn raw_json(raw: &[u8]) -> Option<Value> {
    if raw.is_empty() {
        return None;
    }
    serde_json::from_slice(raw)
        .ok()
        .or_else(|| super::decode_object(raw).ok())
}
