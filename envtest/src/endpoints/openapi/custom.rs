//! The schema of a custom resource as the apiserver publishes it: the CRD version's
//! `openAPIV3Schema`, named after the reversed group (`com.example.v1.Gadget`), with
//! `apiVersion`, `kind` and a `metadata` reference to `ObjectMeta` added and tagged with
//! `x-kubernetes-group-version-kind`. The parent `openapi` module adds the `ObjectMeta`
//! schemas this references.

use serde_json::{Value, json};

use crate::registry::ResourceType;

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The schema name upstream gives a custom kind: the group's labels reversed, then version
/// and kind (`example.com`, `v1`, `Gadget` → `com.example.v1.Gadget`).
pub(crate) fn schema_name(rt: &ResourceType) -> String {
    let mut parts: Vec<&str> = rt.group.split('.').rev().collect();
    parts.push(&rt.version);
    parts.push(&rt.kind);
    parts.join(".")
}

/// The published schema of custom resource type `rt`; `object_meta` is ObjectMeta's name.
pub(crate) fn schema(rt: &ResourceType, object_meta: &str) -> Value {
    let mut s = match rt.schema.as_deref() {
        Some(Value::Object(m)) => Value::Object(m.clone()),
        _ => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    if !s["properties"].is_object() {
        s["properties"] = json!({});
    }
    let props = &mut s["properties"];
    props["apiVersion"] = json!({"type": "string", "description": API_VERSION_DOC});
    props["kind"] = json!({"type": "string", "description": KIND_DOC});
    props["metadata"] = json!({
        "allOf": [{"$ref": format!("#/components/schemas/{object_meta}")}],
        "description": METADATA_DOC,
    });
    s["type"] = json!("object");
    s["x-kubernetes-group-version-kind"] =
        json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]);
    s
}
