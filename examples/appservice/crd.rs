//! The `AppService` custom resource of the Operator SDK walkthrough: the spec says
//! how many Pods of which image to run (desired state), the status which Pods run and
//! whether they are all ready (observed state).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer the operator keeps on every AppService, so that it sees the
/// deletion (and records it) before the object goes.
pub const FINALIZER: &str = "app.example.com/finalizer";

/// The condition type kept in `status.conditions`: every Pod is ready.
pub const CONDITION_AVAILABLE: &str = "Available";

/// The label put on every Pod an AppService owns (its value is the AppService's name).
pub const APP_LABEL: &str = "app.example.com/appservice";

/// What an `AppService` asks for: `size` Pods running `image`.
#[allow(clippy::duplicated_attributes)] // two printer columns share `type_ = "string"`
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "app.example.com",
    version = "v1alpha1",
    kind = "AppService",
    namespaced,
    status = "AppServiceStatus",
    shortname = "appsvc",
    doc = "An application of `size` identical Pods (the Operator SDK walkthrough's kind).",
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AppServiceSpec {
    /// How many Pods to run (default 1).
    #[serde(default = "default_size")]
    #[schemars(range(min = 0))]
    pub size: i32,
    /// The container image of every Pod (default `busybox`).
    #[serde(default = "default_image")]
    pub image: String,
}

fn default_size() -> i32 {
    1
}

fn default_image() -> String {
    "busybox".into()
}

impl Default for AppServiceSpec {
    fn default() -> Self {
        Self {
            size: default_size(),
            image: default_image(),
        }
    }
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AppServiceStatus {
    /// The names of the AppService's Pods, sorted (the Memcached sample's `nodes`).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `Available`: whether every Pod is ready, for which `metadata.generation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The CustomResourceDefinition, as `--print-crd` prints it and the demo installs it.
pub fn crd() -> CustomResourceDefinition {
    AppService::crd()
}
