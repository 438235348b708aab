//! The `FleetConfigMap` custom resource (`fleet.example.com/v1`, namespaced): the data
//! every selected member cluster gets as a ConfigMap of the same namespace and name,
//! and which members have a current copy.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation on every ConfigMap the operator writes: the identity of the replica
/// that wrote it.
pub const WRITTEN_BY: &str = "fleet.example.com/written-by";

/// What a `FleetConfigMap` asks for: `data` in every member cluster whose kubeconfig
/// Secret's labels match `clusterSelector` (all members when it is empty).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "fleet.example.com",
    version = "v1",
    kind = "FleetConfigMap",
    namespaced,
    status = "FleetConfigMapStatus",
    doc = "A ConfigMap kept in every selected member cluster of the fleet.",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FleetConfigMapSpec {
    /// The ConfigMap's data.
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    /// Which members: a label selector over the labels of the members' kubeconfig
    /// Secrets on the hub; empty or absent selects every member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
}

/// Which selected members have the ConfigMap.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct FleetConfigMapStatus {
    /// One entry per selected member, by name.
    #[serde(default)]
    pub clusters: Vec<ClusterStatus>,
}

/// One member's copy.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct ClusterStatus {
    /// The member cluster (its kubeconfig Secret's name).
    pub name: String,
    /// Whether its ConfigMap holds the current `spec.data`.
    pub current: bool,
    /// Why not, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The CRD, for `--print-crd` and the local hub.
pub fn crd() -> CustomResourceDefinition {
    FleetConfigMap::crd()
}
