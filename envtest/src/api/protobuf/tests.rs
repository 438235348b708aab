//! The codec's own tests, and [`sample`]: a representative object of any kind, every field set,
//! built from its descriptor (the registry's table test runs it over every served kind).

use base64::Engine as _;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

use super::schema::{self, Special};
use super::{decode, encode, wants, watch_frame};

/// A representative `kind` at `api_version` in its JSON form, with every field of the message
/// (and of the messages under it, down to a depth that stops recursive schemas) set to a
/// non-empty value of its type; `None` when the descriptors do not have the kind.
pub(crate) fn sample(api_version: &str, kind: &str) -> Option<Value> {
    if !schema::known(api_version, kind) {
        return None;
    }
    let d = schema::message(api_version, kind)?;
    let mut v = sample_message(&d, 0)?;
    let o = v.as_object_mut()?;
    o.insert("apiVersion".into(), json!(api_version));
    o.insert("kind".into(), json!(kind));
    Some(v)
}

fn sample_message(d: &MessageDescriptor, depth: usize) -> Option<Value> {
    if let Some(s) = schema::special(d) {
        return Some(match s {
            Special::Time => json!("2024-01-02T03:04:05Z"),
            Special::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
            Special::Duration => json!("1m30s"),
            Special::Quantity => json!("250m"),
            Special::IntOrString if depth.is_multiple_of(2) => json!(8080),
            Special::IntOrString => json!("http"),
            Special::RawJson => json!({"a": [1, "b"], "c": {"d": true}}),
            Special::OrArray => json!({"type": "string"}),
            Special::OrBool => json!(true),
            Special::OrStringArray | Special::Slice => json!(["a", "b"]),
        });
    }
    if depth > 7 {
        return None;
    }
    let mut o = Map::new();
    for f in d.fields() {
        let kind = f.kind();
        if schema::inline(&f) {
            if let Kind::Message(inner) = &kind
                && let Some(Value::Object(m)) = sample_message(inner, depth + 1)
            {
                o.extend(m);
            }
            continue;
        }
        let v = if f.is_map() {
            let Kind::Message(entry) = &kind else {
                continue;
            };
            sample_value(&entry.map_entry_value_field().kind(), depth + 1).map(|v| json!({"k": v}))
        } else if f.is_list() {
            sample_value(&kind, depth + 1).map(|v| json!([v]))
        } else {
            sample_value(&kind, depth + 1)
        };
        if let Some(v) = v {
            o.insert(schema::json_name(&f).into_owned(), v);
        }
    }
    Some(Value::Object(o))
}

fn sample_value(kind: &Kind, depth: usize) -> Option<Value> {
    Some(match kind {
        Kind::String => json!("s"),
        Kind::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(b"bytes")),
        Kind::Bool => json!(true),
        Kind::Double | Kind::Float => json!(1.5),
        Kind::Message(d) => return sample_message(d, depth),
        _ => json!(3),
    })
}

/// JSON -> protobuf -> JSON of `v`.
pub(crate) fn round_trip(v: &Value) -> Result<Value, String> {
    let bytes = encode(v)?;
    decode(&bytes).map_err(|e| e.message)
}

#[test]
fn every_kind_of_the_descriptors_round_trips() {
    for (av, kind) in [
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("meta.k8s.io/v1", "Status"),
        ("meta.k8s.io/v1", "DeleteOptions"),
    ] {
        let v = sample(av, kind).unwrap_or_else(|| panic!("{av} {kind}"));
        assert_eq!(round_trip(&v).as_ref(), Ok(&v), "{av} {kind}");
    }
}

#[test]
fn special_types_have_their_go_json_form() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": "2024-01-02T03:04:05Z",
                     "labels": {"a": "b"}, "managedFields": [{"manager": "m", "fieldsV1": {"f:metadata": {}}}]},
        "spec": {"containers": [{"name": "c", "image": "i",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"cpu": "250m", "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
                    "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]}],
                 "volumes": [{"name": "v", "configMap": {"name": "cm"}}],
                 "terminationGracePeriodSeconds": 0},
    });
    assert_eq!(round_trip(&pod), Ok(pod));
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                        "data": {"k": "dmFsdWU=", "empty": ""}});
    assert_eq!(round_trip(&secret), Ok(secret));
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                      "metadata": {"name": "r"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    assert_eq!(round_trip(&role), Ok(role));
}

#[test]
fn zero_meta_fields_go_writes_are_left_out_as_its_json_leaves_them() {
    // Go's protobuf encoder writes `generation: 0` in a pod template's ObjectMeta; its JSON
    // (omitempty) does not, and a stored template must not differ from the JSON one by it.
    let with_zeros = |generation: Option<i64>| {
        let mut meta = json!({"labels": {"app": "d"}});
        if let Some(g) = generation {
            meta["generation"] = json!(g);
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"app": "d"}},
                        "template": {"metadata": meta,
                                     "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    assert_eq!(round_trip(&with_zeros(Some(0))), Ok(with_zeros(None)));
    assert_eq!(round_trip(&with_zeros(Some(2))), Ok(with_zeros(Some(2))));
    // Pointers keep their zero: `deletionGracePeriodSeconds: 0` means "now".
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p", "deletionGracePeriodSeconds": 0}});
    assert_eq!(round_trip(&pod), Ok(pod));
}

#[test]
fn custom_resources_and_foreign_bodies_are_unsupported() {
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(encode(&cr).is_err());
    assert_eq!(decode(b"{}").map_err(|e| e.code), Err(415));
    assert_eq!(decode(b"k8s\0\xff\xff").map_err(|e| e.code), Err(400));
}

#[test]
fn negotiation_and_watch_frames() {
    assert!(wants(
        "application/vnd.kubernetes.protobuf, application/json"
    ));
    assert!(wants("application/vnd.kubernetes.protobuf;stream=watch"));
    assert!(!wants(
        "application/json, application/vnd.kubernetes.protobuf"
    ));
    let bookmark = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": "7"}});
    let frame = watch_frame("BOOKMARK", &bookmark).expect("a frame");
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len + 4, frame.len());
}
