//! The `Memcached` custom resource (cache.example.com/v1alpha1): the spec says what is
//! wanted, the status what the operator observed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition type kept in `status.conditions`: the Memcached is ready.
pub const CONDITION_AVAILABLE: &str = "Available";

/// What a `Memcached` asks for.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    namespaced,
    status = "MemcachedStatus",
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// How many replicas of the image to run (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i32>,
    /// The container port of the image (default the controller's `DEFAULT_PORT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// `Available` and the other conditions, for which `metadata.generation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The sample of `config/samples/`: what `cargo run` creates.
pub fn sample() -> Memcached {
    let mut s = Memcached::new("memcached-sample", MemcachedSpec::default());
    s.metadata.namespace = Some("default".into());
    s
}
