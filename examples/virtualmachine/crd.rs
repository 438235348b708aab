//! The `VirtualMachine` custom resource (`cloudnative.tw/v1alpha1`), as the client-go
//! sample-controller article defines it: the resources a VM asks for and what should
//! be done with it (spec); its phase, the hypervisor's view of the server and when
//! that was last looked at (status). The resources are Kubernetes quantities, as in
//! the article's manifest (`resource: {cpu: 2, memory: 4G}`, `rootDisk: "40G"`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
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
    printcolumn(name = "CPU", type_ = "string", json_path = ".spec.resource.cpu")
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineSpec {
    /// The server's resources.
    pub resource: ResourceSpec,
    /// What to do with the server: `stop` powers it off; empty or `start` runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// The resources of a server, as Kubernetes quantities (Go's `resource.Quantity`):
/// `2` or `500m` CPUs, `4G` or `4Gi` of memory, a `40G` root disk.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Virtual CPUs.
    #[schemars(schema_with = "quantity_schema")]
    pub cpu: Quantity,
    /// Memory.
    #[schemars(schema_with = "quantity_schema")]
    pub memory: Quantity,
    /// Root disk (the hypervisor's default when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub root_disk: Option<Quantity>,
}

impl ResourceSpec {
    /// The number of CPUs (`500m` is 0.5); 0 if `cpu` is not a quantity.
    pub fn cpus(&self) -> f64 {
        quantity_value(&self.cpu).unwrap_or_default()
    }

    /// The memory in bytes (`4G` is 4e9, `4Gi` 2^32); 0 if `memory` is not a quantity.
    pub fn memory_bytes(&self) -> f64 {
        quantity_value(&self.memory).unwrap_or_default()
    }
}

/// The pattern controller-gen puts on every `resource.Quantity` field
/// (`k8s.io/apimachinery/pkg/api/resource/quantity.go`'s grammar).
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The schema of a `resource.Quantity`: an integer or a string matching
/// [`QUANTITY_PATTERN`]. controller-gen also writes `anyOf: [{type: integer}, {type:
/// string}]`, which says the same as `x-kubernetes-int-or-string` (and which kube's
/// structural rewrite would empty).
fn quantity_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// The value of quantity `q` (`2`, `500m`, `4G`, `4Gi`, `1e3`), or `None` if it is not
/// one (`quantity.go`'s `ParseQuantity`, to the precision of an `f64`).
pub fn quantity_value(q: &Quantity) -> Option<f64> {
    let s = q.0.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e => 10f64.powi(e.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
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
