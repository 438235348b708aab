//! JSON ↔ CEL values, shaped by the OpenAPI schema as kube-apiserver's `UnstructuredToVal` does:
//! `number` fields are doubles even when written `1`, property names that are not CEL identifiers
//! are escaped (`foo-bar` → `foo__dash__bar`), and at a resource root `metadata` shows only `name`
//! and `generateName`. [`super::rules`] binds the results to `self` / `oldSelf`; [`super::policy`]
//! binds whole objects (no schema) to `object` / `oldObject`.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use base64::Engine;

use cel::Value;
use cel::objects::Map;
use serde_json::Value as Json;

/// CEL's reserved words, escaped as `__{word}__` when they name a property.
const RESERVED: [&str; 23] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
    "int",
    "map",
];

/// A property name as CEL sees it (apiserver `cel.Escape`), or `None` if it cannot be escaped.
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// `value` as a CEL value, typed by `schema` (a structural schema node; `Json::Null` for none).
pub(crate) fn to_cel(schema: &Json, value: &Json, root: bool) -> Value {
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => number(schema, n),
        Json::String(s) => string(schema, s),
        Json::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Json::Null);
            Value::List(Arc::new(
                items
                    .iter()
                    .map(|i| to_cel(item_schema, i, embedded(item_schema)))
                    .collect(),
            ))
        }
        Json::Object(map) => object(schema, map, root),
    }
}

fn embedded(schema: &Json) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Json::as_bool)
        == Some(true)
}

fn number(schema: &Json, n: &serde_json::Number) -> Value {
    let is_double = schema.get("type").and_then(Json::as_str) == Some("number");
    match (n.as_i64(), is_double) {
        (Some(i), false) => Value::Int(i),
        _ => match n.as_u64() {
            Some(u) if !is_double && u > i64::MAX as u64 => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
    }
}

/// A string typed by its `format`, as upstream: `byte` is bytes, `date-time` and `date` are
/// timestamps, `duration` a duration; a value that does not parse stays a string.
fn string(schema: &Json, s: &str) -> Value {
    static CONVERT: LazyLock<[cel::Program; 2]> = LazyLock::new(|| {
        ["timestamp(v)", "duration(v)"]
            .map(|src| cel::Program::compile(src).expect("conversions compile"))
    });
    let via = |program: &cel::Program, text: String| {
        let mut ctx = cel::Context::default();
        ctx.add_variable_from_value("v", Value::String(Arc::new(text)));
        program.execute(&ctx).ok()
    };
    let converted = match schema.get("format").and_then(Json::as_str) {
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(s)
            .ok()
            .map(|b| Value::Bytes(Arc::new(b))),
        Some("date-time" | "datetime") => via(&CONVERT[0], s.to_string()),
        Some("date") => via(&CONVERT[0], format!("{s}T00:00:00Z")),
        Some("duration") => via(&CONVERT[1], s.to_string()),
        _ => None,
    };
    converted.unwrap_or_else(|| Value::String(Arc::new(s.to_string())))
}

fn object(schema: &Json, map: &serde_json::Map<String, Json>, root: bool) -> Value {
    let props = schema.get("properties").and_then(Json::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let mut out: HashMap<cel::objects::Key, Value> = HashMap::with_capacity(map.len());
    for (k, v) in map {
        if root && k == "metadata" {
            out.insert("metadata".into(), root_metadata(v));
            continue;
        }
        let (key, sub) = match (props, additional) {
            (Some(p), _) => match escape(k) {
                Some(key) => (key, p.get(k).unwrap_or(&Json::Null)),
                None => continue,
            },
            (None, Some(a)) => (k.clone(), a),
            (None, None) => (k.clone(), &Json::Null),
        };
        out.insert(key.into(), to_cel(sub, v, embedded(sub)));
    }
    Value::Map(Map { map: Arc::new(out) })
}

/// At a resource root CEL sees `metadata.name` and `metadata.generateName` only.
fn root_metadata(meta: &Json) -> Value {
    let mut out: HashMap<cel::objects::Key, Value> = HashMap::new();
    for k in ["name", "generateName"] {
        if let Some(Json::String(s)) = meta.get(k) {
            out.insert(k.into(), Value::String(Arc::new(s.clone())));
        }
    }
    Value::Map(Map { map: Arc::new(out) })
}

/// A whole object with no schema (admission policies see every field).
pub(crate) fn plain(value: &Json) -> Value {
    to_cel(&Json::Null, value, false)
}

/// A CEL value back as JSON (what the tests compare).
#[cfg(test)]
pub(crate) fn to_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.to_string()),
        Value::List(l) => Json::Array(l.iter().map(to_json).collect()),
        Value::Map(m) => Json::Object(
            m.map
                .iter()
                .map(|(k, v)| (key_string(k), to_json(v)))
                .collect(),
        ),
        other => Json::String(format!("{other:?}")),
    }
}

#[cfg(test)]
fn key_string(k: &cel::objects::Key) -> String {
    match k {
        cel::objects::Key::String(s) => s.to_string(),
        cel::objects::Key::Int(i) => i.to_string(),
        cel::objects::Key::Uint(u) => u.to_string(),
        cel::objects::Key::Bool(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_property_names_as_upstream() {
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1abc"), None);
    }

    #[test]
    fn numbers_follow_the_schema_type() {
        let s = json!({"type": "object", "properties": {"r": {"type": "number"}, "n": {"type": "integer"}}});
        let v = to_json(&to_cel(&s, &json!({"r": 1, "n": 2}), false));
        assert_eq!(v, json!({"r": 1.0, "n": 2}));
        assert!(matches!(
            to_cel(&s["properties"]["r"], &json!(1), false),
            Value::Float(_)
        ));
    }

    #[test]
    fn formatted_strings_are_typed() {
        let ts = json!({"type": "string", "format": "date-time"});
        assert!(matches!(
            to_cel(&ts, &json!("2024-01-02T03:04:05Z"), false),
            Value::Timestamp(_)
        ));
        assert!(matches!(
            to_cel(&ts, &json!("not a time"), false),
            Value::String(_)
        ));
        let d = json!({"type": "string", "format": "duration"});
        assert!(matches!(
            to_cel(&d, &json!("1h30m"), false),
            Value::Duration(_)
        ));
        let b = json!({"type": "string", "format": "byte"});
        assert!(matches!(to_cel(&b, &json!("aGk="), false), Value::Bytes(_)));
    }

    #[test]
    fn root_metadata_shows_name_only() {
        let v = to_json(&to_cel(
            &json!({}),
            &json!({"metadata": {"name": "a", "uid": "x"}}),
            true,
        ));
        assert_eq!(v, json!({"metadata": {"name": "a"}}));
    }
}
