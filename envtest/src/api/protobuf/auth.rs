//! Protobuf bodies of the authentication and authorization requests kubectl sends through its
//! typed clients: `TokenRequest` (`kubectl create token`), `SelfSubjectAccessReview`
//! (`kubectl auth can-i`), `SelfSubjectRulesReview` (`can-i --list`) and `SelfSubjectReview`
//! (`auth whoami`), decoded into the JSON form a JSON body of the same object has.

use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use prost::Message;
use serde_json::{Map, Value, json};

use super::{put, with_meta};

/// The JSON object of an auth request body of `kind` at `api_version`; `None` for other kinds.
pub(super) fn decode(
    api_version: &str,
    kind: &str,
    raw: &[u8],
) -> Option<Result<Map<String, Value>, prost::DecodeError>> {
    Some(match (api_version, kind) {
        ("authentication.k8s.io/v1", "TokenRequest") => {
            authn::TokenRequest::decode(raw).map(token_request)
        }
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            authn::SelfSubjectReview::decode(raw).map(|r| with_meta(r.metadata))
        }
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            authz::SelfSubjectAccessReview::decode(raw).map(access_review)
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            authz::SelfSubjectRulesReview::decode(raw).map(|r| {
                let mut obj = with_meta(r.metadata);
                let mut spec = Map::new();
                put(
                    &mut spec,
                    "namespace",
                    json!(r.spec.and_then(|s| s.namespace)),
                );
                obj.insert("spec".into(), Value::Object(spec));
                obj
            })
        }
        _ => return None,
    })
}

fn token_request(r: authn::TokenRequest) -> Map<String, Value> {
    let mut obj = with_meta(r.metadata);
    let s = r.spec.unwrap_or_default();
    let mut spec = Map::new();
    put(&mut spec, "audiences", json!(s.audiences));
    put(&mut spec, "expirationSeconds", json!(s.expiration_seconds));
    obj.insert("spec".into(), Value::Object(spec));
    obj
}

fn access_review(r: authz::SelfSubjectAccessReview) -> Map<String, Value> {
    let mut obj = with_meta(r.metadata);
    let s = r.spec.unwrap_or_default();
    let mut spec = Map::new();
    if let Some(a) = s.resource_attributes {
        let mut m = Map::new();
        for (k, v) in [
            ("namespace", a.namespace),
            ("verb", a.verb),
            ("group", a.group),
            ("version", a.version),
            ("resource", a.resource),
            ("subresource", a.subresource),
            ("name", a.name),
        ] {
            put(&mut m, k, json!(v));
        }
        spec.insert("resourceAttributes".into(), Value::Object(m));
    }
    if let Some(a) = s.non_resource_attributes {
        let mut m = Map::new();
        put(&mut m, "path", json!(a.path));
        put(&mut m, "verb", json!(a.verb));
        spec.insert("nonResourceAttributes".into(), Value::Object(m));
    }
    obj.insert("spec".into(), Value::Object(spec));
    obj
}
