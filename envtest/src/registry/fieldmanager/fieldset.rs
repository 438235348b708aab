//! Field sets of server-side apply (`sigs.k8s.io/structured-merge-diff/fieldpath/set.go`,
//! `k8s.io/apimachinery/pkg/util/managedfields/internal/fields.go`): the leaf fields an object or
//! an applied configuration sets, as paths of structured-merge-diff tokens — `f:<field>` for map
//! keys, `k:{<key fields as JSON>}` for elements of associative lists, `v:<json>` for elements of
//! sets and `.` for an element itself. They convert to and from the `fieldsV1` form stored in
//! `metadata.managedFields`, and locate, read and remove the values they name. Which lists are
//! associative comes from [`Shape`]: the strategic-merge table
//! ([`api::strategic`](crate::api::strategic)) for built-ins, the CRD schema's
//! `x-kubernetes-list-type` for custom resources.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::api::strategic::{self, ListStrategy};
use crate::registry::ResourceType;

/// One leaf path.
pub(crate) type Path = Vec<String>;
/// A set of leaf paths.
pub(crate) type FieldSet = BTreeSet<Path>;

/// Marks "inside a list element" in a name path.
pub(crate) const ITEM: &str = "[]";

/// Defaults of associative-list key fields that upstream's OpenAPI declares (`protocol` of
/// container and service ports defaults to `TCP`), so `{containerPort: 80}` and
/// `{containerPort: 80, protocol: TCP}` name the same element, as structured-merge-diff does.
fn key_default(key: &str) -> Option<Value> {
    (key == "protocol").then(|| Value::String("TCP".into()))
}

/// The value of key field `key` of a list element, defaulted.
fn key_value(elem: &Value, key: &str) -> Option<Value> {
    elem.get(key).cloned().or_else(|| key_default(key))
}

/// How the lists of one resource type merge.
pub(crate) struct Shape<'a> {
    pub rt: &'a ResourceType,
}

impl<'a> Shape<'a> {
    /// The strategy of list `field` under the field names `names` (with `[]` for list items).
    /// Built-ins use the strategic-merge table, except that ports are keyed by
    /// (port, protocol) as upstream's `x-kubernetes-list-map-keys` declare.
    pub fn list(&self, names: &[String], field: &str) -> ListStrategy {
        self.list_at(names, field, self.schema_of(names, field))
    }

    /// [`Shape::list`] for a walk that carries the field's schema node (`schema`, from
    /// [`Shape::child`]) instead of finding it from the root.
    pub fn list_at<S: AsRef<str>>(
        &self,
        names: &[S],
        field: &str,
        schema: Option<&Value>,
    ) -> ListStrategy {
        if self.rt.schema.is_none() {
            let plain: Vec<&str> = names
                .iter()
                .map(AsRef::as_ref)
                .filter(|n| *n != ITEM)
                .collect();
            return match strategic::list_strategy(&plain, field) {
                ListStrategy::Map(mut keys) if field == "ports" => {
                    keys.push("protocol".into());
                    ListStrategy::Map(keys)
                }
                other => other,
            };
        }
        match schema {
            Some(s) => list_type(s),
            None => ListStrategy::Atomic,
        }
    }

    /// Whether the map `field` under `names` is owned as a whole: a `LabelSelector`
    /// (`structType: atomic` upstream) of a built-in, or a CRD field with
    /// `x-kubernetes-map-type: atomic`.
    pub fn atomic_map(&self, names: &[String], field: &str) -> bool {
        self.atomic_map_at(
            names.last().map(String::as_str),
            field,
            self.schema_of(names, field),
        )
    }

    /// [`Shape::atomic_map`] for a walk that carries the field's schema node (`schema`) and
    /// the name of the map it is in (`parent`).
    pub fn atomic_map_at(&self, parent: Option<&str>, field: &str, schema: Option<&Value>) -> bool {
        if self.rt.schema.is_none() {
            let plain_selector = self.rt.group.is_empty()
                && matches!(self.rt.kind.as_str(), "Service" | "ReplicationController");
            return field == "selector" && parent == Some("spec") && !plain_selector;
        }
        schema
            .and_then(|s| s.get("x-kubernetes-map-type"))
            .and_then(Value::as_str)
            == Some("atomic")
    }

    /// Whether a map or list that did not exist before gets its own entry (`.`) in an
    /// `Update` field set. Upstream diffs against the Go zero value of the type, in which
    /// non-pointer structs (`spec`, `status`, `metadata`, a pod `template`, `strategy`, …) and
    /// lists without `omitempty` (`containers`) already exist; custom resources are diffed as
    /// unstructured JSON, where everything new is new.
    pub fn tracks_new_node(&self, field: &str) -> bool {
        self.rt.schema.is_some()
            || !matches!(
                field,
                "metadata"
                    | "spec"
                    | "status"
                    | "template"
                    | "strategy"
                    | "updateStrategy"
                    | "jobTemplate"
                    | "resources"
                    | "containers"
            )
    }

    /// The CRD schema of the object itself (`None` for built-ins), where a walk with
    /// [`Shape::child`] starts.
    pub fn root(&self) -> Option<&'a Value> {
        self.rt.schema.as_deref()
    }

    /// The schema node of `field` (`[]` for a list's items) inside schema node `s`.
    pub fn child<'v>(s: Option<&'v Value>, field: &str) -> Option<&'v Value> {
        let s = s?;
        if field == ITEM {
            return s.get("items");
        }
        s.get("properties")
            .and_then(|p| p.get(field))
            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
    }

    /// The CRD schema node of `field` under `names`.
    fn schema_of(&self, names: &[String], field: &str) -> Option<&'a Value> {
        names
            .iter()
            .map(String::as_str)
            .chain([field])
            .fold(self.root(), Self::child)
    }
}

/// The list type a CRD schema node declares.
fn list_type(s: &Value) -> ListStrategy {
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

/// The path element `f:<k>` of field `k` (built without the formatting machinery: one is made
/// per field of every written object).
pub(crate) fn field_token(k: &str) -> String {
    let mut t = String::with_capacity(k.len() + 2);
    t.push_str("f:");
    t.push_str(k);
    t
}

/// `k:{...}` for an element of a list keyed by `keys` (`None` if it lacks every key).
pub(crate) fn key_token(elem: &Value, keys: &[String]) -> Option<String> {
    let mut ks: Vec<&String> = keys.iter().collect();
    ks.sort();
    let mut m = Map::new();
    for k in ks {
        if let Some(v) = key_value(elem, k) {
            m.insert(k.clone(), v);
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
        at.push(field_token(k));
        match child {
            Value::Object(_) if shape.atomic_map(names, k) => {
                out.insert(at.clone());
            }
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
    let mut v = Value::Object(root);
    collapse_dots(&mut v);
    v
}

/// A node whose only member is `.` (the node itself, with nothing below it owned) is written
/// as `{}`, as structured-merge-diff encodes it.
fn collapse_dots(v: &mut Value) {
    if let Value::Object(m) = v {
        if m.len() == 1 && m.contains_key(".") {
            m.clear();
            return;
        }
        m.values_mut().for_each(collapse_dots);
    }
}

/// `set` without the paths of `gone`; a node and its `.` entry count as the same path.
pub(crate) fn subtract(set: &mut FieldSet, gone: &FieldSet) {
    set.retain(|p| {
        let dot_less: &[String] = match p.last().map(String::as_str) {
            Some(".") => &p[..p.len() - 1],
            _ => p,
        };
        if gone.contains(p) || gone.contains(dot_less) {
            return false;
        }
        let mut dotted = dot_less.to_vec();
        dotted.push(".".into());
        !gone.contains(&dotted)
    });
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
        return want
            .iter()
            .all(|(f, v)| key_value(e, f).as_ref() == Some(v));
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
