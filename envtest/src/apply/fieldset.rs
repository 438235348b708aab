//! Field sets of server-side apply (spec §1.10): the leaf fields an object or an applied
//! configuration sets, as paths of structured-merge-diff tokens — `f:<field>` for map keys,
//! `k:{<key fields as JSON>}` for elements of associative lists, `v:<json>` for elements of
//! sets and `.` for an element itself. They convert to and from the `fieldsV1` form stored in
//! `metadata.managedFields`, and locate, read and remove the values they name. Which lists are
//! associative comes from [`Shape`]: the strategic-merge table (`crate::strategic`) for built-ins,
//! the CRD schema's `x-kubernetes-list-type` for custom resources.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::registry::ResourceType;
use crate::strategic::{self, ListStrategy};

/// One leaf path.
pub(crate) type Path = Vec<String>;
/// A set of leaf paths.
pub(crate) type FieldSet = BTreeSet<Path>;

/// Marks "inside a list element" in a name path.
const ITEM: &str = "[]";

/// How the lists of one resource type merge.
pub(crate) struct Shape<'a> {
    pub rt: &'a ResourceType,
}

impl Shape<'_> {
    /// The strategy of list `field` under the field names `names` (with `[]` for list items).
    pub fn list(&self, names: &[String], field: &str) -> ListStrategy {
        let Some(schema) = &self.rt.schema else {
            let plain: Vec<String> = names.iter().filter(|n| *n != ITEM).cloned().collect();
            return strategic::list_strategy(&plain, field);
        };
        let mut s: Option<&Value> = Some(schema);
        for n in names.iter().map(String::as_str).chain([field]) {
            s = s.and_then(|s| {
                if n == ITEM {
                    s.get("items")
                } else {
                    s.get("properties")
                        .and_then(|p| p.get(n))
                        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                }
            });
        }
        let Some(s) = s else {
            return ListStrategy::Atomic;
        };
        match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListStrategy::Set,
            Some("map") => ListStrategy::Map(
                s.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|k| k.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListStrategy::Atomic,
        }
    }
}

/// `k:{...}` for an element of a list keyed by `keys` (`None` if it lacks every key).
pub(crate) fn key_token(elem: &Value, keys: &[String]) -> Option<String> {
    let mut ks: Vec<&String> = keys.iter().collect();
    ks.sort();
    let mut m = Map::new();
    for k in ks {
        if let Some(v) = elem.get(k) {
            m.insert(k.clone(), v.clone());
        }
    }
    if m.is_empty() {
        return None;
    }
    Some(format!("k:{}", Value::Object(m)))
}

/// The leaf fields of `v` (a map) under token path `at` and name path `names`.
pub(crate) fn collect(
    shape: &Shape,
    v: &Value,
    at: &mut Path,
    names: &mut Vec<String>,
    out: &mut FieldSet,
) {
    let Value::Object(m) = v else {
        out.insert(at.clone());
        return;
    };
    if m.is_empty() && !at.is_empty() {
        out.insert(at.clone());
    }
    for (k, child) in m {
        at.push(format!("f:{k}"));
        match child {
            Value::Object(_) => {
                names.push(k.clone());
                collect(shape, child, at, names, out);
                names.pop();
            }
            Value::Array(items) => match shape.list(names, k) {
                ListStrategy::Atomic => {
                    out.insert(at.clone());
                }
                ListStrategy::Set => {
                    for e in items {
                        let mut p = at.clone();
                        p.push(format!("v:{e}"));
                        out.insert(p);
                    }
                }
                ListStrategy::Map(keys) => {
                    names.push(k.clone());
                    names.push(ITEM.into());
                    for e in items {
                        match key_token(e, &keys) {
                            Some(t) => {
                                at.push(t);
                                let mut dot = at.clone();
                                dot.push(".".into());
                                out.insert(dot);
                                collect(shape, e, at, names, out);
                                at.pop();
                            }
                            None => {
                                out.insert(at.clone());
                            }
                        }
                    }
                    names.pop();
                    names.pop();
                }
            },
            _ => {
                out.insert(at.clone());
            }
        }
        at.pop();
    }
}

/// The fields of an object (or applied configuration), without apiVersion, kind, name and
/// namespace, which nobody owns.
pub(crate) fn of_object(shape: &Shape, obj: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    collect(shape, obj, &mut Vec::new(), &mut Vec::new(), &mut out);
    out.retain(|p| {
        let s: Vec<&str> = p.iter().map(String::as_str).collect();
        !matches!(
            s.as_slice(),
            ["f:apiVersion"]
                | ["f:kind"]
                | ["f:metadata", "f:name"]
                | ["f:metadata", "f:namespace"]
                | ["f:metadata"]
        )
    });
    out
}

/// `fieldsV1` of a set.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for p in set {
        let mut node = &mut root;
        for t in p {
            let next = node
                .entry(t.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !next.is_object() {
                *next = Value::Object(Map::new());
            }
            node = match next {
                Value::Object(m) => m,
                _ => break,
            };
        }
    }
    Value::Object(root)
}

/// The set a `fieldsV1` value describes.
pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
    fn walk(v: &Value, at: &mut Path, out: &mut FieldSet) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, c) in m {
                    at.push(k.clone());
                    walk(c, at, out);
                    at.pop();
                }
            }
            _ => {
                if !at.is_empty() {
                    out.insert(at.clone());
                }
            }
        }
    }
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

fn elem_matches(e: &Value, token: &str) -> bool {
    if let Some(k) = token.strip_prefix("k:") {
        let Ok(Value::Object(want)) = serde_json::from_str::<Value>(k) else {
            return false;
        };
        return want.iter().all(|(f, v)| e.get(f) == Some(v));
    }
    if let Some(v) = token.strip_prefix("v:") {
        return serde_json::from_str::<Value>(v).is_ok_and(|w| *e == w);
    }
    false
}

/// The value a path names (`.` names the element itself).
pub(crate) fn get<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for t in path {
        if t == "." {
            continue;
        }
        cur = match t.strip_prefix("f:") {
            Some(f) => cur.get(f)?,
            None => cur.as_array()?.iter().find(|e| elem_matches(e, t))?,
        };
    }
    Some(cur)
}

/// Removes what a path names; a path ending in `.` removes the list element.
pub(crate) fn remove(v: &mut Value, path: &[String]) {
    let path: &[String] = match path.last().map(String::as_str) {
        Some(".") => &path[..path.len() - 1],
        _ => path,
    };
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for t in parent {
        let next = match t.strip_prefix("f:") {
            Some(f) => cur.get_mut(f),
            None => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|e| elem_matches(e, t))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last.strip_prefix("f:") {
        Some(f) => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(f);
            }
        }
        None => {
            if let Some(a) = cur.as_array_mut() {
                a.retain(|e| !elem_matches(e, last));
            }
        }
    }
}

/// A path as upstream prints it in conflicts: `.spec.containers[name="a"].image`.
pub(crate) fn display(path: &[String]) -> String {
    let mut s = String::new();
    for t in path {
        if let Some(f) = t.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = t.strip_prefix("k:") {
            let inner = serde_json::from_str::<Value>(k)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            s.push_str(&format!("[{inner}]"));
        } else if let Some(v) = t.strip_prefix("v:") {
            s.push_str(&format!("[{v}]"));
        }
    }
    s
}
