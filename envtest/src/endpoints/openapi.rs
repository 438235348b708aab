//! OpenAPI v3 documents served under `/openapi/v3/...`
//! (`k8s.io/kube-openapi/pkg/handler3/handler.go`). `discovery` lists them in the root with a
//! content hash and routes here; this module builds one group-version's document: a PATCH operation
//! per resource (its `fieldValidation` parameter tells kubectl the server validates) and
//! `components.schemas` with the full schemas `kubectl explain` reads — built-ins from
//! `registry::builtins::schemas` (k8s-openapi's generated schemas), custom resources from their CRD
//! (`openapi::custom`), each document carrying every schema it references. Documents of
//! built-in-only group-versions never change and are cached for the process.

mod custom;

use std::collections::{BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::registry::builtins::schemas as builtin;
use crate::registry::{ResourceType, Snapshot};

/// One group-version document and the hash that goes into its URL.
#[derive(Debug)]
pub(crate) struct Document {
    /// The OpenAPI v3 document.
    pub doc: Value,
    /// Changes whenever the document does (kubectl's HTTP cache keys on the URL).
    pub hash: String,
}

/// The `api/v1` or `apis/G/V` part of a group-version's URLs.
pub(crate) fn gv_path(g: &str, v: &str) -> String {
    if g.is_empty() {
        format!("api/{v}")
    } else {
        format!("apis/{g}/{v}")
    }
}

/// The document of group-version `g`/`v`, or `None` when it is not served.
pub(crate) fn document(snap: &Snapshot, g: &str, v: &str) -> Option<Arc<Document>> {
    if !snap.has_group_version(g, v) {
        return None;
    }
    let types: Vec<&Arc<ResourceType>> = snap
        .in_group_version(g, v)
        .filter(|t| !t.virtual_create)
        .collect();
    if types.iter().any(|t| t.crd.is_some()) {
        return Some(Arc::new(build(g, v, &types)));
    }
    // Built-in group-versions: the same types give the same document, so build it once.
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Document>>>> = OnceLock::new();
    let key = types.iter().fold(gv_path(g, v), |k, t| {
        format!("{k}|{}/{}/{}", t.kind, t.plural, t.namespaced)
    });
    let cache = CACHE.get_or_init(Default::default);
    if let Some(d) = cache.lock().get(&key) {
        return Some(d.clone());
    }
    let d = Arc::new(build(g, v, &types));
    cache.lock().insert(key, d.clone());
    Some(d)
}

fn build(g: &str, v: &str, types: &[&Arc<ResourceType>]) -> Document {
    let b = builtin::builtins();
    let mut schemas = Map::new();
    let mut wanted = Vec::new();
    for t in types {
        if t.crd.is_some() {
            schemas.insert(
                custom::schema_name(t),
                custom::schema(t, &builtin::object_meta_name()),
            );
            wanted.push(builtin::object_meta_name());
        } else if let Some(name) =
            b.roots
                .get(&(t.group.clone(), t.version.clone(), t.kind.clone()))
        {
            wanted.push(name.clone());
        }
    }
    add_closure(&mut schemas, wanted, &b.definitions);
    let mut paths = Map::new();
    for t in types {
        paths.insert(item_path(g, v, t), patch_operation(t));
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    });
    let mut h = DefaultHasher::new();
    doc.to_string().hash(&mut h);
    Document {
        doc,
        hash: format!("{:016X}", h.finish()),
    }
}

/// Copies the schemas named in `todo`, and every schema they reference, from `all`.
fn add_closure(out: &mut Map<String, Value>, mut todo: Vec<String>, all: &Map<String, Value>) {
    let mut seen: BTreeSet<String> = out.keys().cloned().collect();
    for s in out.values() {
        refs(s, &mut todo);
    }
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(s) = all.get(&name) {
            refs(s, &mut todo);
            out.insert(name, s.clone());
        }
    }
}

/// Collects the schema names `v` references through `$ref`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(n) = r.strip_prefix("#/components/schemas/") {
                            out.push(n.to_string());
                        }
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn item_path(g: &str, v: &str, t: &ResourceType) -> String {
    if t.namespaced {
        format!(
            "/{}/namespaces/{{namespace}}/{}/{{name}}",
            gv_path(g, v),
            t.plural
        )
    } else {
        format!("/{}/{}/{{name}}", gv_path(g, v), t.plural)
    }
}

/// The PATCH operation kubectl looks at to decide whether the server validates fields.
/// Strategic merge is not listed: the schemas carry no patch strategies, so kubectl computes
/// strategic patches from its compiled-in types.
fn patch_operation(t: &ResourceType) -> Value {
    json!({
        "patch": {
            "operationId": format!("patch{}", t.kind),
            "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
            "x-kubernetes-action": "patch",
            "parameters": [
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            ],
            "requestBody": {"content": {
                "application/json-patch+json": {"schema": {"type": "object"}},
                "application/merge-patch+json": {"schema": {"type": "object"}},
                "application/apply-patch+yaml": {"schema": {"type": "object"}},
            }},
            "responses": {"200": {"description": "OK"}},
        }
    })
}
