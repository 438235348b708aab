//! Part of `api` (layer 0): the Kubernetes protobuf wire format
//! (`application/vnd.kubernetes.protobuf`) of every built-in kind, as client-go sends and
//! reads it by default for built-in types (upstream's
//! `k8s.io/apimachinery/pkg/runtime/serializer/protobuf`).
//!
//! **How.** One generic transcoder between protobuf bytes and the JSON form the rest of the
//! server works on, driven by message descriptors, with no per-kind code. Kubernetes' own
//! `generated.proto` files (vendored in `envtest/proto/`, the Kubernetes version of the `k8s-pb`
//! crate) are compiled with protox into a `FileDescriptorSet`, checked in as `proto/k8s.fds`
//! (`tests/integration/protobuf_descriptors.rs` recompiles and compares); [`schema`] indexes its
//! messages by group, version and kind; prost-reflect decodes and encodes
//! [`prost_reflect::DynamicMessage`]s; [`to_json`] and [`from_json`] map those to and from
//! `serde_json` values field by field, under Kubernetes' JSON names. go-to-protobuf names
//! fields after their JSON tags, so the mapping is the identity but for what [`schema`] lists:
//! types with a JSON form of their own (`Time` and `MicroTime` as RFC 3339 strings, `Duration`
//! as Go's duration string, `Quantity` as a string, `IntOrString`, `RawExtension` / `FieldsV1` /
//! `JSON` as inline JSON, the `JSONSchemaPropsOr*` unions, named string slices as arrays), the
//! embedded structs Go's JSON inlines (`Volume`'s `VolumeSource`, `Probe`'s handler, ...), and
//! a handful of renamed fields. Bytes are base64 and maps objects, as in Go's JSON. A
//! descriptor-driven transcoder was chosen over k8s-openapi's serde types plus a prost<->serde
//! mapping because the descriptors carry what both sides need (field numbers, types, maps vs
//! lists) for every kind at once, and a new Kubernetes version is a re-vendored `proto/`.
//!
//! **Framing.** An object is the 4 bytes `k8s\0` and a `runtime.Unknown` whose `typeMeta` names
//! apiVersion and kind and whose `raw` is the message ([`decode`], [`encode`]); a watch event is a
//! 4-byte big-endian length and a `metav1.WatchEvent` whose `object.raw` is such an object
//! ([`watch_frame`]). Custom resources have no descriptors: a protobuf body naming one is a 415
//! and they are answered in JSON (the endpoints' negotiation, [`wants`]).

mod from_json;
mod gotime;
mod schema;
mod to_json;
mod wire;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use prost_reflect::DynamicMessage;
use serde_json::{Value, json};

use crate::api::status::ApiError;
use wire::{RawExtension, TypeMeta, Unknown, WatchEvent};

/// The media type of Kubernetes protobuf.
pub(crate) const MEDIA: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub(crate) const WATCH_MEDIA: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The 4 bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// What a 415 says is accepted.
const ACCEPTED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Whether an `Accept` header asks for protobuf first (client-go's default for built-in kinds
/// is `application/vnd.kubernetes.protobuf, application/json`).
pub(crate) fn wants(accept: &str) -> bool {
    let first = accept.split(',').next().unwrap_or("");
    first.split(';').next().unwrap_or("").trim() == MEDIA
}

/// Decodes a protobuf request body of any built-in kind into its JSON form (with `kind` and
/// `apiVersion`). A body that is not Kubernetes protobuf, or names a kind with no descriptor
/// (a custom resource), is a 415, as upstream answers a media type the resource does not read.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    match envelope(body) {
        Err(Envelope::Unsupported) => Err(ApiError::unsupported_media(ACCEPTED)),
        Err(Envelope::Bad(e)) => Err(ApiError::bad_request(e)),
        Ok((tm, _)) if schema::message(&tm.0, &tm.1).is_none() => {
            Err(ApiError::unsupported_media(ACCEPTED))
        }
        Ok((tm, raw)) => transcode(&tm, &raw).map_err(ApiError::bad_request),
    }
}

/// [`decode`] as a plain error (for objects embedded in objects).
pub(super) fn decode_object(body: &[u8]) -> Result<Value, String> {
    let (tm, raw) = envelope(body).map_err(|_| "not a Kubernetes protobuf object".to_string())?;
    transcode(&tm, &raw)
}

enum Envelope {
    Unsupported,
    Bad(String),
}

fn envelope(body: &[u8]) -> Result<((String, String), Vec<u8>), Envelope> {
    let rest = body.strip_prefix(MAGIC).ok_or(Envelope::Unsupported)?;
    let unknown =
        Unknown::decode(rest).map_err(|e| Envelope::Bad(format!("protobuf envelope: {e}")))?;
    if !matches!(unknown.content_encoding.as_deref(), None | Some("")) {
        return Err(Envelope::Unsupported);
    }
    let tm = unknown.type_meta.unwrap_or_default();
    let type_meta = (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
    );
    Ok((type_meta, unknown.raw.unwrap_or_default()))
}

fn transcode((api_version, kind): &(String, String), raw: &[u8]) -> Result<Value, String> {
    let d = schema::message(api_version, kind)
        .ok_or_else(|| format!("no protobuf message for {api_version} {kind}"))?;
    tracing::debug!(%api_version, %kind, bytes = raw.len(), "decoding protobuf");
    let m = DynamicMessage::decode(d, raw).map_err(|e| format!("protobuf {kind}: {e}"))?;
    let mut v = to_json::message(&m).unwrap_or_else(|| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!(api_version));
        o.insert("kind".into(), json!(kind));
    }
    Ok(v)
}

/// The protobuf body of a JSON object with `kind` and `apiVersion` (an object, a list, a
/// `Status`); an error when the kind has no descriptor (a custom resource) or does not fit it.
pub(crate) fn encode(v: &Value) -> Result<Vec<u8>, String> {
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let d = schema::message(api_version, kind)
        .ok_or_else(|| format!("no protobuf message for {api_version} {kind}"))?;
    let raw = from_json::message(&d, v)?.encode_to_vec();
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = Vec::with_capacity(MAGIC.len() + unknown.encoded_len());
    out.extend_from_slice(MAGIC);
    unknown.encode(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// One frame of a protobuf watch stream: the event `ty` (`ADDED`, `BOOKMARK`, `ERROR`, ...) of
/// `obj`, length-prefixed.
pub(crate) fn watch_frame(ty: &str, obj: &Value) -> Result<Bytes, String> {
    let event = WatchEvent {
        r#type: Some(ty.to_string()),
        object: Some(RawExtension {
            raw: Some(encode(obj)?),
        }),
    };
    let len = event.encoded_len();
    let mut out = BytesMut::with_capacity(4 + len);
    out.put_u32(u32::try_from(len).map_err(|e| e.to_string())?);
    event.encode(&mut out).map_err(|e| e.to_string())?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::{round_trip, sample};
