//! The `ControllerRing` API (`sharding.timebertt.dev/v1alpha1`, cluster-scoped), as
//! upstream's `pkg/apis/sharding/v1alpha1`: a ring names the main resources its shards
//! reconcile and, for each, the resources those control.
//!
//! The sharder (`super::sharder`) reads the ring to know what to assign and how to
//! key it (`super::ring`); shards only need the ring's name (`super::shard`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A resource, by API group and plural (`metav1.GroupResource`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// The API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// The resource (plural, lower case).
    pub resource: String,
}

impl GroupResource {
    /// `resource` in `group`.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

/// `resource.group`, or `resource` in the core group (Go's `GroupResource.String`).
impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// A main resource of the ring and the resources its objects control.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RingResource {
    /// The main resource (the one whose objects the controller reconciles).
    #[serde(flatten)]
    pub group_resource: GroupResource,
    /// Resources controlled by the main resource's objects (`ownerReference` with
    /// `controller: true`): assigned to their controller's shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controlled_resources: Vec<GroupResource>,
}

/// The desired state of a ring: which resources it shards across its shards.
#[allow(clippy::duplicated_attributes)] // printer columns share `type_ = "string"`
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "sharding.timebertt.dev",
    version = "v1alpha1",
    kind = "ControllerRing",
    status = "ControllerRingStatus",
    doc = "A virtual ring of sharded controller instances (kubernetes-controller-sharding's ControllerRing).",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type == \"Ready\")].status"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.availableShards"
    ),
    printcolumn(name = "Shards", type_ = "string", json_path = ".status.shards"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ControllerRingSpec {
    /// The resources distributed across the ring's shards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<RingResource>,
    /// Only objects in namespaces matching this selector are sharded (all when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
}

/// What the sharder last observed of a ring.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ControllerRingStatus {
    /// The generation the sharder observed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    /// All shards of the ring (every shard lease, whatever its state).
    #[serde(default)]
    pub shards: i32,
    /// The shards available for assignment (Ready, Expired or Uncertain).
    #[serde(default)]
    pub available_shards: i32,
    /// The ring's conditions: `Ready` is true when the sharder's last sync of the ring
    /// succeeded, false with the reason when it did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl ControllerRing {
    /// A ring named `name` sharding `resources`.
    pub fn with_resources(name: &str, resources: Vec<RingResource>) -> Self {
        Self::new(
            name,
            ControllerRingSpec {
                resources,
                namespace_selector: None,
            },
        )
    }

    /// The ring's name (empty if unset).
    pub fn ring_name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

/// The `ControllerRing` CustomResourceDefinition, for installing the API where the
/// upstream sharder is not deployed.
pub fn controllerring_crd() -> CustomResourceDefinition {
    ControllerRing::crd()
}
