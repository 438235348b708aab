//! The `StorageBucket` custom resource: a bucket in an object store that lives
//! *outside* the cluster. The spec says where the bucket answers; the status says
//! whether it did the last time the operator looked.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer the operator puts on every bucket, so that it sees the deletion
/// and can release the bucket before the object goes away.
pub const FINALIZER: &str = "storage.example.com/finalizer";

/// The condition type kept in `status.conditions`.
pub const CONDITION_AVAILABLE: &str = "Available";

/// The probe path the defaulting webhook fills in when a bucket leaves it empty.
pub const DEFAULT_PROBE_PATH: &str = "/healthz";

/// What a `StorageBucket` asks for: a bucket reachable over HTTP at `endpoint`.
// Two printer columns share `type_ = "date"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "storage.example.com",
    version = "v1",
    kind = "StorageBucket",
    namespaced,
    status = "StorageBucketStatus",
    shortname = "sb",
    doc = "A bucket in an object store outside the cluster, probed over HTTP.",
    printcolumn(name = "Endpoint", type_ = "string", json_path = ".spec.endpoint"),
    printcolumn(name = "Available", type_ = "boolean", json_path = ".status.available"),
    printcolumn(
        name = "Last Probe",
        type_ = "date",
        json_path = ".status.lastProbeTime"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct StorageBucketSpec {
    /// The bucket's HTTP(S) endpoint (`http://host:port/path`); the validating
    /// webhook rejects any other scheme.
    pub endpoint: String,
    /// The path under `endpoint` that is probed; a 2xx answer to a GET means the
    /// bucket is available. The defaulting webhook sets `/healthz` when it is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_path: Option<String>,
}

impl StorageBucketSpec {
    /// A spec for `endpoint` with no probe path (the webhook defaults it).
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            probe_path: None,
        }
    }

    /// The URL a probe GETs: `endpoint` joined with the probe path (the endpoint
    /// itself while no probe path is set).
    pub fn probe_url(&self) -> String {
        match self.probe_path.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => format!(
                "{}/{}",
                self.endpoint.trim_end_matches('/'),
                path.trim_start_matches('/')
            ),
            None => self.endpoint.clone(),
        }
    }
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageBucketStatus {
    /// Whether the last probe got a 2xx answer (absent until the first probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// When the last probe ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// The `metadata.generation` the last probe saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The `Available` condition, with the probe's outcome as reason and message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl StorageBucket {
    /// The `Available` condition, if the bucket has been probed.
    pub fn available_condition(&self) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_AVAILABLE)
    }
}

/// The CustomResourceDefinition, as `--print-crd` prints it and the demo installs it.
pub fn crd() -> CustomResourceDefinition {
    StorageBucket::crd()
}
