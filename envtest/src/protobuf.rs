//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl's
//! `create namespace|configmap|secret` generators send them. `verbs::decode_body` hands
//! such bodies here and gets back the same JSON object a JSON body would have decoded to.

use serde_json::Value;

use crate::status::ApiError;

/// Decodes a protobuf-encoded object body into its JSON form.
pub(crate) fn decode(_body: &[u8]) -> Result<Value, ApiError> {
    Err(ApiError::unsupported_media(
        "application/json, application/yaml (protobuf bodies, which kubectl's `create namespace|configmap|secret` generators send, are not supported: use `kubectl create -f` or `kubectl apply -f`)",
    ))
}
