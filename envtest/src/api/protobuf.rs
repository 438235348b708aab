//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl's `create
//! namespace|configmap|secret|serviceaccount|role|clusterrole|rolebinding|clusterrolebinding`
//! generators and its auth commands send them
//! (`k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`).
//! [`endpoints::decode_body`](crate::endpoints::decode_body) hands such bodies here and gets back
//! the JSON object a JSON body of the same object decodes to, so everything after decoding is the
//! JSON path. The envelope (magic `k8s\0`, then a `runtime.Unknown` naming apiVersion and kind
//! around the object's own bytes) and the objects are decoded with `k8s-pb`'s generated messages
//! (prost); other kinds get a clear 415 that points at `kubectl create -f`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Map, Value, json};

use crate::api::status::ApiError;

mod auth;
mod rbac;

/// The 4 bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// What a 415 for a kind with no protobuf decoder says is accepted.
const ACCEPTED: &str = "application/json, application/yaml, and application/vnd.kubernetes.protobuf for v1 Namespace, ConfigMap, Secret and ServiceAccount, the RBAC kinds and the auth requests kubectl sends (use `kubectl create -f` or `kubectl apply -f` for other kinds)";

/// Decodes a protobuf-encoded object body into its JSON form.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    // Upstream answers 400 here; a body that is not a Kubernetes protobuf message at all is
    // treated as an unknown format (415), like any other media type this server cannot read.
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::unsupported_media(ACCEPTED))?;
    let unknown = Unknown::decode(envelope)
        .map_err(|e| ApiError::bad_request(format!("protobuf envelope: {e}")))?;
    let tm = unknown.type_meta.unwrap_or_default();
    let api_version = tm.api_version.unwrap_or_default();
    let kind = tm.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    if !matches!(unknown.content_encoding.as_deref(), None | Some("")) {
        return Err(ApiError::unsupported_media(ACCEPTED));
    }
    tracing::debug!(%api_version, %kind, bytes = raw.len(), "decoding protobuf body");
    let bad = |e: prost::DecodeError| ApiError::bad_request(format!("protobuf {kind}: {e}"));
    let mut obj = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => namespace(pb::Namespace::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "ConfigMap") => config_map(pb::ConfigMap::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "Secret") => secret(pb::Secret::decode(raw.as_slice()).map_err(bad)?),
        ("v1", "ServiceAccount") => {
            service_account(pb::ServiceAccount::decode(raw.as_slice()).map_err(bad)?)
        }
        (v, k) => match auth::decode(v, k, raw.as_slice())
            .or_else(|| rbac::decode(v, k, raw.as_slice()))
        {
            Some(decoded) => decoded.map_err(bad)?,
            None => return Err(ApiError::unsupported_media(ACCEPTED)),
        },
    };
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    Ok(Value::Object(obj))
}

/// Inserts `v` under `k` unless it is empty (JSON bodies omit empty fields too).
fn put(m: &mut Map<String, Value>, k: &str, v: Value) {
    let empty = match &v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if !empty {
        m.insert(k.into(), v);
    }
}

fn with_meta(meta: Option<ObjectMeta>) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert(
        "metadata".into(),
        Value::Object(object_meta(meta.unwrap_or_default())),
    );
    obj
}

/// The fields of ObjectMeta a client may set; server-owned timestamps are left to the server.
fn object_meta(m: ObjectMeta) -> Map<String, Value> {
    let mut o = Map::new();
    put(&mut o, "name", json!(m.name));
    put(&mut o, "generateName", json!(m.generate_name));
    put(&mut o, "namespace", json!(m.namespace));
    put(&mut o, "uid", json!(m.uid));
    put(&mut o, "resourceVersion", json!(m.resource_version));
    put(&mut o, "labels", json!(m.labels));
    put(&mut o, "annotations", json!(m.annotations));
    put(&mut o, "finalizers", json!(m.finalizers));
    let owners: Vec<Value> = m
        .owner_references
        .into_iter()
        .map(|r| {
            let mut x = Map::new();
            put(&mut x, "apiVersion", json!(r.api_version));
            put(&mut x, "kind", json!(r.kind));
            put(&mut x, "name", json!(r.name));
            put(&mut x, "uid", json!(r.uid));
            put(&mut x, "controller", json!(r.controller));
            put(&mut x, "blockOwnerDeletion", json!(r.block_owner_deletion));
            Value::Object(x)
        })
        .collect();
    put(&mut o, "ownerReferences", json!(owners));
    o
}

/// Binary map values as JSON bodies carry them: base64 strings.
fn base64_map(m: BTreeMap<String, Vec<u8>>) -> Value {
    json!(
        m.into_iter()
            .map(|(k, v)| (k, B64.encode(v)))
            .collect::<BTreeMap<_, _>>()
    )
}

fn namespace(ns: pb::Namespace) -> Map<String, Value> {
    let mut o = with_meta(ns.metadata);
    let finalizers = ns.spec.map(|s| s.finalizers).unwrap_or_default();
    if !finalizers.is_empty() {
        o.insert("spec".into(), json!({"finalizers": finalizers}));
    }
    o
}

fn config_map(cm: pb::ConfigMap) -> Map<String, Value> {
    let mut o = with_meta(cm.metadata);
    put(&mut o, "data", json!(cm.data));
    put(&mut o, "binaryData", base64_map(cm.binary_data));
    put(&mut o, "immutable", json!(cm.immutable));
    o
}

fn secret(s: pb::Secret) -> Map<String, Value> {
    let mut o = with_meta(s.metadata);
    put(&mut o, "data", base64_map(s.data));
    put(&mut o, "stringData", json!(s.string_data));
    put(&mut o, "type", json!(s.r#type));
    put(&mut o, "immutable", json!(s.immutable));
    o
}

fn service_account(sa: pb::ServiceAccount) -> Map<String, Value> {
    let mut o = with_meta(sa.metadata);
    put(
        &mut o,
        "automountServiceAccountToken",
        json!(sa.automount_service_account_token),
    );
    let names = |refs: Vec<Option<String>>| -> Value {
        json!(
            refs.into_iter()
                .flatten()
                .map(|n| json!({"name": n}))
                .collect::<Vec<_>>()
        )
    };
    put(
        &mut o,
        "imagePullSecrets",
        names(sa.image_pull_secrets.into_iter().map(|r| r.name).collect()),
    );
    put(
        &mut o,
        "secrets",
        names(sa.secrets.into_iter().map(|r| r.name).collect()),
    );
    o
}
