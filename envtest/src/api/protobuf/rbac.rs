//! Protobuf bodies of the RBAC objects kubectl's generators send through its typed clients:
//! `kubectl create role|clusterrole|rolebinding|clusterrolebinding`, decoded into the JSON
//! form a JSON body of the same object has.

use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apimachinery::pkg::apis::meta::v1::LabelSelector;
use prost::Message;
use serde_json::{Map, Value, json};

use super::{put, with_meta};

/// The JSON object of an RBAC body of `kind` at `api_version`; `None` for other kinds.
pub(super) fn decode(
    api_version: &str,
    kind: &str,
    raw: &[u8],
) -> Option<Result<Map<String, Value>, prost::DecodeError>> {
    if api_version != "rbac.authorization.k8s.io/v1" {
        return None;
    }
    Some(match kind {
        "Role" => rbac::Role::decode(raw).map(|r| with_rules(with_meta(r.metadata), r.rules)),
        "ClusterRole" => rbac::ClusterRole::decode(raw).map(|r| {
            let mut obj = with_rules(with_meta(r.metadata), r.rules);
            if let Some(a) = r.aggregation_rule {
                let selectors: Vec<Value> =
                    a.cluster_role_selectors.into_iter().map(selector).collect();
                obj.insert(
                    "aggregationRule".into(),
                    json!({ "clusterRoleSelectors": selectors }),
                );
            }
            obj
        }),
        "RoleBinding" => rbac::RoleBinding::decode(raw)
            .map(|b| binding(with_meta(b.metadata), b.subjects, b.role_ref)),
        "ClusterRoleBinding" => rbac::ClusterRoleBinding::decode(raw)
            .map(|b| binding(with_meta(b.metadata), b.subjects, b.role_ref)),
        _ => return None,
    })
}

/// `rules` as JSON bodies carry them (JSON always has the list, even when empty).
fn with_rules(mut obj: Map<String, Value>, rules: Vec<rbac::PolicyRule>) -> Map<String, Value> {
    let rules: Vec<Value> = rules
        .into_iter()
        .map(|r| {
            let mut m = Map::new();
            put(&mut m, "verbs", json!(r.verbs));
            put(&mut m, "apiGroups", json!(r.api_groups));
            put(&mut m, "resources", json!(r.resources));
            put(&mut m, "resourceNames", json!(r.resource_names));
            put(&mut m, "nonResourceURLs", json!(r.non_resource_ur_ls));
            Value::Object(m)
        })
        .collect();
    obj.insert("rules".into(), json!(rules));
    obj
}

fn binding(
    mut obj: Map<String, Value>,
    subjects: Vec<rbac::Subject>,
    role_ref: Option<rbac::RoleRef>,
) -> Map<String, Value> {
    let subjects: Vec<Value> = subjects
        .into_iter()
        .map(|s| {
            let mut m = Map::new();
            put(&mut m, "kind", json!(s.kind));
            put(&mut m, "apiGroup", json!(s.api_group));
            put(&mut m, "name", json!(s.name));
            put(&mut m, "namespace", json!(s.namespace));
            Value::Object(m)
        })
        .collect();
    put(&mut obj, "subjects", json!(subjects));
    let r = role_ref.unwrap_or_default();
    let mut m = Map::new();
    put(&mut m, "apiGroup", json!(r.api_group));
    put(&mut m, "kind", json!(r.kind));
    put(&mut m, "name", json!(r.name));
    obj.insert("roleRef".into(), Value::Object(m));
    obj
}

fn selector(s: LabelSelector) -> Value {
    let mut m = Map::new();
    put(&mut m, "matchLabels", json!(s.match_labels));
    let exprs: Vec<Value> = s
        .match_expressions
        .into_iter()
        .map(|e| {
            let mut x = Map::new();
            put(&mut x, "key", json!(e.key));
            put(&mut x, "operator", json!(e.operator));
            put(&mut x, "values", json!(e.values));
            Value::Object(x)
        })
        .collect();
    put(&mut m, "matchExpressions", json!(exprs));
    Value::Object(m)
}
