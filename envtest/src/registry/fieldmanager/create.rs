//! The `fieldsV1` of a create's `Update` entry in one walk over the new object. A create's entry
//! is every field of the object (structured-merge-diff's `TypedValue.Compare` against nothing,
//! as [`compare`](super::compare) computes it, less upstream's `stripSet`), so instead of
//! comparing with nothing, collecting a set of paths and folding the set into a tree, this builds
//! the `fieldsV1` tree as it walks, carrying the CRD schema node down (rather than finding it from
//! the root at every field). The output is the same, byte for byte (a unit test below holds the
//! two to it); [`update::record_update`](super::update::record_update) takes this path for creates
//! that start from no entries, the common case, and the general one otherwise. `metadata` is a
//! map by then (`meta::init_create` made it one).

use serde_json::{Map, Value};

use super::fieldset::{self, ITEM, Path, Shape};
use crate::api::strategic::ListStrategy;

/// Metadata fields nobody owns (upstream's `stripSet`).
const STRIPPED_META: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// Whether nobody owns `p` (upstream's `stripSet`).
pub(super) fn stripped(p: &Path) -> bool {
    match p.first().map(String::as_str) {
        Some("f:apiVersion" | "f:kind") => p.len() == 1,
        Some("f:metadata") => match p.get(1).map(String::as_str) {
            None | Some(".") => true,
            Some(f) => f
                .strip_prefix("f:")
                .is_some_and(|f| STRIPPED_META.contains(&f)),
        },
        _ => false,
    }
}

/// The `fieldsV1` of every field of `obj` but the ones nobody owns (empty when it has none).
pub(super) fn fields_v1(shape: &Shape, obj: &Value) -> Map<String, Value> {
    let Value::Object(m) = obj else {
        return Map::new();
    };
    let mut w = Walk {
        shape,
        names: Vec::new(),
    };
    let mut out = Map::new();
    for (k, v) in m {
        let schema = Shape::child(shape.root(), k);
        let node = match k.as_str() {
            "metadata" => w.metadata(v, schema),
            _ => w.field(k, v, schema),
        };
        match node {
            // A bare `apiVersion` or `kind` is stripped; one with fields below it is not.
            Some(Value::Object(n))
                if n.is_empty() && matches!(k.as_str(), "apiVersion" | "kind") => {}
            Some(n) => {
                out.insert(fieldset::field_token(k), n);
            }
            None => {}
        }
    }
    out
}

/// An owned leaf, or a map or list element that nothing below is owned in.
fn leaf() -> Value {
    Value::Object(Map::new())
}

struct Walk<'a, 'v> {
    shape: &'a Shape<'a>,
    /// The field names from the root (`[]` inside list elements), for built-ins' list table.
    names: Vec<&'v str>,
}

impl<'v> Walk<'_, 'v> {
    /// `metadata`: its own entry and the fields in `STRIPPED_META` are stripped.
    fn metadata(&mut self, v: &'v Value, schema: Option<&Value>) -> Option<Value> {
        let Value::Object(m) = v else {
            return None;
        };
        if self.shape.atomic_map_at(None, "metadata", schema) {
            return None;
        }
        self.names.push("metadata");
        let mut out = Map::new();
        for (k, c) in m {
            if STRIPPED_META.contains(&k.as_str()) {
                continue;
            }
            if let Some(n) = self.field(k, c, Shape::child(schema, k)) {
                out.insert(fieldset::field_token(k), n);
            }
        }
        self.names.pop();
        (!out.is_empty()).then_some(Value::Object(out))
    }

    /// The node of field `k` holding `v` (schema node `schema`); `None` when nothing is owned.
    fn field(&mut self, k: &'v str, v: &'v Value, schema: Option<&Value>) -> Option<Value> {
        let parent = self.names.last().copied();
        let tracked = self.shape.tracks_new_node(k);
        match v {
            Value::Object(m) if !self.shape.atomic_map_at(parent, k, schema) => {
                self.names.push(k);
                let inner = self.children(m, schema);
                self.names.pop();
                node(inner, tracked)
            }
            Value::Array(items) => match self.shape.list_at(&self.names, k, schema) {
                ListStrategy::Set => {
                    let inner = items.iter().map(|e| (format!("v:{e}"), leaf())).collect();
                    node(inner, tracked)
                }
                ListStrategy::Map(keys) if keyed(items, &keys) => {
                    self.names.push(k);
                    self.names.push(ITEM);
                    let inner = self.map_list(items, &keys, Shape::child(schema, ITEM));
                    self.names.truncate(self.names.len() - 2);
                    node(inner, tracked)
                }
                _ => Some(leaf()),
            },
            _ => Some(leaf()),
        }
    }

    /// The nodes of the fields of map `m`.
    fn children(
        &mut self,
        m: &'v Map<String, Value>,
        schema: Option<&Value>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (k, c) in m {
            if let Some(n) = self.field(k, c, Shape::child(schema, k)) {
                out.insert(fieldset::field_token(k), n);
            }
        }
        out
    }

    /// The elements of an associative list, by key; a repeated key names the first element.
    fn map_list(
        &mut self,
        items: &'v [Value],
        keys: &[String],
        schema: Option<&Value>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for e in items {
            let (Some(t), Value::Object(m)) = (fieldset::key_token(e, keys), e) else {
                continue;
            };
            if out.contains_key(&t) {
                continue;
            }
            let inner = self.children(m, schema);
            out.insert(t, node(inner, true).unwrap_or_else(leaf));
        }
        out
    }
}

/// Whether every element of a list is a map with a key.
fn keyed(items: &[Value], keys: &[String]) -> bool {
    items
        .iter()
        .all(|e| e.is_object() && fieldset::key_token(e, keys).is_some())
}

/// A map or list with the nodes `inner` below it. A tracked one is owned itself: `{}` when
/// nothing below is, else marked `.`; an untracked one (a Go struct that exists in the zero
/// value) is only the fields below it, and nothing when there are none.
fn node(mut inner: Map<String, Value>, tracked: bool) -> Option<Value> {
    if inner.is_empty() {
        return tracked.then(leaf);
    }
    if tracked {
        inner.insert(".".into(), leaf());
    }
    Some(Value::Object(inner))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::compare;
    use super::super::fieldset::{self, Shape};
    use crate::registry::ResourceType;

    /// What the general path records for a create: compare with nothing, strip, fold.
    fn by_compare(shape: &Shape, obj: &Value) -> Value {
        let mut added = compare::compare(shape, None, obj).added;
        added.retain(|p| !super::stripped(p));
        fieldset::to_fields_v1(&added)
    }

    fn same(rt: &ResourceType, obj: Value) {
        let shape = Shape { rt };
        let one_walk = Value::Object(super::fields_v1(&shape, &obj));
        assert_eq!(one_walk, by_compare(&shape, &obj), "{obj}");
        assert_eq!(
            serde_json::to_string(&one_walk).unwrap(),
            serde_json::to_string(&by_compare(&shape, &obj)).unwrap()
        );
    }

    fn builtin(plural: &str) -> ResourceType {
        crate::registry::builtins::builtin_types()
            .into_iter()
            .find(|t| t.plural == plural)
            .unwrap()
    }

    #[test]
    fn builtins_match_the_general_path() {
        same(
            &builtin("configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "d", "uid": "u", "labels": {"a": "1"}, "annotations": {},
                    "finalizers": ["a", "b", "a"], "ownerReferences": [{"uid": "1", "name": "o"}, {"uid": "1", "name": "p"}, {"name": "nokey"}]},
                "data": {"a": "1", "b": ""}, "binaryData": {}}),
        );
        same(
            &builtin("configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        );
        same(
            &builtin("pods"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [{"uid": "1"}]},
                "spec": {"containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}],
                     "env": [{"name": "A", "value": "1"}], "resources": {}},
                    {"name": "d", "image": "i", "volumeMounts": []}],
                  "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": [{"key": "k"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True"}], "phase": "Pending"}}),
        );
        same(
            &builtin("deployments"),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "strategy": {},
                  "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}}}}),
        );
        same(
            &builtin("services"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}}),
        );
    }

    fn custom(schema: Value) -> ResourceType {
        let mut rt = builtin("configmaps");
        rt.group = "x.dev".into();
        rt.kind = "Thing".into();
        rt.schema = Some(std::sync::Arc::new(schema));
        rt
    }

    #[test]
    fn custom_resources_match_the_general_path() {
        let rt = custom(json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {"type": "object", "properties": {"port": {"type": "integer"}, "inner": {"type": "object", "x-kubernetes-map-type": "atomic"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "plain": {"type": "array", "items": {"type": "object"}},
                "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "byName": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "keys": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}}}},
                "empty": {"type": "object"},
                "nokeys": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object"}}}},
            "status": {"type": "object"}}}));
        same(
            &rt,
            json!({"apiVersion": "x.dev/v1", "kind": "Thing",
                "metadata": {"name": "t", "generation": 1, "labels": {}, "finalizers": ["f"]},
                "spec": {"ports": [{"port": 1, "inner": {"a": 1}}, {"port": 1, "protocol": "UDP"}, {"port": 1}],
                  "tags": ["a", "b", "a"], "plain": [{"a": 1}], "sel": {"a": "b"}, "empty": {},
                  "byName": {"x": {"keys": [], "other": null}, "y": {}}, "nokeys": [{"a": 1}], "unknown": {"deep": {}}},
                "status": {}}),
        );
        same(
            &rt,
            json!({"apiVersion": "x.dev/v1", "kind": "Thing", "metadata": {"name": "t"}}),
        );
        same(
            &rt,
            json!({"apiVersion": {"odd": 1}, "kind": {}, "metadata": {}, "spec": {"nokeys": []}}),
        );
    }
}
