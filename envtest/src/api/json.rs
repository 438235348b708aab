//! Decoding a JSON request body into a `serde_json::Value` while noting its duplicate keys, in
//! one pass: what upstream's strict decoder (`sigs.k8s.io/json`'s `UnmarshalStrict`, used by
//! `k8s.io/apiserver/pkg/endpoints/handlers/rest.go` for `fieldValidation`) reports as
//! `duplicate field "spec.a"`. The field validation of the handlers
//! ([`endpoints::handlers::fields`](crate::endpoints::handlers::fields)) turns the paths into
//! warnings or a 400; this module only finds them.
//!
//! The value is the one `serde_json::from_slice` gives (a key given twice keeps its last value;
//! the same errors, from the same deserializer), so a body is parsed once, not once to decode it
//! and again to look for duplicates. A key's path is rendered only when it is a duplicate: while
//! walking, each level borrows its key from the level above (a linked list on the stack).

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value, map};

/// `body` decoded, and the paths (`spec.a`, `spec.list[0].b`, in the order met) of the keys it
/// gives more than once.
pub(crate) fn decode(body: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let v = Node {
        at: None,
        found: &found,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, found.into_inner()))
}

/// The paths of the keys `body` gives more than once; empty when it is not JSON (its decoder
/// reports that).
#[cfg(test)]
fn duplicate_keys(body: &[u8]) -> Vec<String> {
    decode(body).map(|(_, d)| d).unwrap_or_default()
}

/// One step of a path: a key or a list index.
enum Seg<'k> {
    Key(&'k str),
    Index(usize),
}

/// The path to a value: its last step and the path of its parent.
struct Link<'k> {
    seg: Seg<'k>,
    up: Option<&'k Link<'k>>,
}

impl Link<'_> {
    /// `spec.l[0].b`: keys joined by dots, indexes in brackets.
    fn render(&self, out: &mut String) {
        if let Some(up) = self.up {
            up.render(out);
        }
        match self.seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

/// Decodes one value found at `at`.
struct Node<'a, 'k> {
    at: Option<&'k Link<'k>>,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let link = Link {
                seg: Seg::Key(&key),
                up: self.at,
            };
            // One search of the map per key, after its value: a duplicate is then reported
            // before its value's own (`mark`), as a search before the value would have.
            let mark = self.found.borrow().len();
            let v = map.next_value_seed(Node {
                at: Some(&link),
                found: self.found,
            })?;
            match out.entry(key) {
                map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                map::Entry::Occupied(mut e) => {
                    let mut path = String::new();
                    Link {
                        seg: Seg::Key(e.key()),
                        up: self.at,
                    }
                    .render(&mut path);
                    self.found.borrow_mut().insert(mark, path);
                    e.insert(v);
                }
            }
        }
        Ok(Value::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let link = Link {
                seg: Seg::Index(out.len()),
                up: self.at,
            };
            let node = Node {
                at: Some(&link),
                found: self.found,
            };
            match seq.next_element_seed(node)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_with_their_paths_in_order() {
        let body =
            br#"{"spec": {"a": 1, "a": 2, "l": [{"b": 1, "b": {}}]}, "kind": "X", "kind": "X"}"#;
        assert_eq!(duplicate_keys(body), vec!["spec.a", "spec.l[0].b", "kind"]);
        // A duplicate key is noted when it is met, before its value's own duplicates.
        let body = br#"{"a": {"x": 1, "x": 2}, "a": {"y": 1, "y": 2}}"#;
        assert_eq!(duplicate_keys(body), vec!["a.x", "a", "a.y"]);
        assert_eq!(duplicate_keys(br#"[{"b": 1, "b": 2}]"#), vec!["[0].b"]);
        assert_eq!(duplicate_keys(br#"{"": {"b": 1, "b": 2}}"#), vec!["b"]);
        assert!(duplicate_keys(br#"{"a": {"a": 1}}"#).is_empty());
        assert!(duplicate_keys(b"not json").is_empty());
    }

    #[test]
    fn the_value_and_errors_are_serde_jsons() {
        let bodies: [&[u8]; 9] = [
            br#"{"a": 1, "a": {"b": [1, -2, 3.5, 1e400, "\u00e9", null, true]}, "c": "x\"y"}"#,
            br#"{"n": 18446744073709551615, "m": -9223372036854775808, "f": 0.1}"#,
            b"[]",
            b"  7 ",
            br#"{"a": 1} x"#,
            br#"{"a": }"#,
            b"",
            br#"{"a": "\ud800"}"#,
            br#"{"\u0061": 1, "a": 2}"#,
        ];
        for body in bodies {
            let ours = decode(body).map(|(v, _)| v).map_err(|e| e.to_string());
            let theirs = serde_json::from_slice::<Value>(body).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(body));
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            decode(deep.as_bytes()).map_err(|e| e.to_string()).err(),
            serde_json::from_str::<Value>(&deep)
                .map_err(|e| e.to_string())
                .err(),
        );
        assert_eq!(duplicate_keys(br#"{"\u0061": 1, "a": 2}"#), vec!["a"]);
    }
}
