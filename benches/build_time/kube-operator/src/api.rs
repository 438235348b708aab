//! The `Memcached` custom resource (cache.example.com/v1alpha1).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition type kept in `status.conditions`.
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
    /// How many replicas the Deployment runs (default 1).
    pub size: Option<i32>,
    /// The container port of the image.
    pub container_port: Option<i32>,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// `Available` and the other conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
