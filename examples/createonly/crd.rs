//! The `AppService` custom resource (`app.example.com/v1alpha1`), as the Operator
//! SDK walkthrough defines it: how many Pods of which image (spec), and which Pods
//! run with what conditions (status). The createonly example only needs the kind to
//! watch; this is the same group, version, kind, plural and fields as the
//! `appservice` example's.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What an `AppService` asks for: `size` Pods running `image`.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "app.example.com",
    version = "v1alpha1",
    kind = "AppService",
    plural = "appservices",
    namespaced,
    status = "AppServiceStatus",
    doc = "An application of `size` Pods running `image` (the Operator SDK walkthrough's kind)."
)]
#[serde(rename_all = "camelCase")]
pub struct AppServiceSpec {
    /// How many Pods to run (at least 0; 1 when left out).
    #[serde(default = "default_size")]
    #[schemars(range(min = 0))]
    pub size: i32,
    /// The Pods' container image (`busybox` when left out).
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
    /// The names of the application's Pods, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// `Available`, with the generation it was computed for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The CustomResourceDefinition, as `--print-crd` prints it and the demo installs it.
pub fn crd() -> CustomResourceDefinition {
    AppService::crd()
}
