//! The `VirtualMachine` custom resource (`cloudnative.tw/v1alpha1`), as the client-go
//! sample-controller article defines it: the resources a VM asks for and what should
//! be done with it (spec); its phase, the hypervisor's view of the server and when
//! that was last looked at (status).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer the controller puts on every VirtualMachine, so that the server is
/// deleted from the hypervisor before the object goes.
pub const FINALIZER: &str = "cloudnative.tw/finalizer";

/// `spec.action` that powers a server off; anything else (or nothing) keeps it running.
pub const ACTION_STOP: &str = "stop";

/// `status.phase` once the server exists on the hypervisor.
pub const PHASE_ACTIVE: &str = "Active";

/// What a `VirtualMachine` asks for.
// Two printer columns share `type_ = "string"`, which clippy takes for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "cloudnative.tw",
    version = "v1alpha1",
    kind = "VirtualMachine",
    plural = "virtualmachines",
    shortname = "vm",
    namespaced,
    status = "VirtualMachineStatus",
    doc = "A virtual machine on a (fake) hypervisor: the client-go sample-controller's kind.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "State", type_ = "string", json_path = ".status.server.state"),
    printcolumn(name = "CPU", type_ = "integer", json_path = ".spec.resource.cpu")
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineSpec {
    /// The server's resources.
    pub resource: ResourceSpec,
    /// What to do with the server: `stop` powers it off; empty or `start` runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// The resources of a server.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Virtual CPUs.
    pub cpu: i64,
    /// Memory, in MiB.
    pub memory: i64,
    /// Root disk, in GiB.
    pub root_disk: i64,
}

/// What the controller observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineStatus {
    /// `Active` once the server exists on the hypervisor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The hypervisor's view of the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerStatus>,
    /// When the controller last wrote this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// A server as the hypervisor reports it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// `Running` or `Stopped`.
    pub state: String,
    /// What the server uses now.
    pub usage: ResourceUsage,
}

/// A server's current use of its resources.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// CPU in use, in percent of the server's CPUs.
    pub cpu: f64,
    /// Memory in use, in percent of the server's memory.
    pub memory: f64,
}

/// The CustomResourceDefinition, as `--print-crd` prints it and the demo installs it.
pub fn crd() -> CustomResourceDefinition {
    VirtualMachine::crd()
}
