//! ctrl-envtest's `cel` feature, both sides, through a kube client over HTTP. With it (the
//! default) a CRD whose schema has `x-kubernetes-validations` is stored and its rules enforced,
//! and ValidatingAdmissionPolicies are stored. Without it (`cargo test -p ctrl-envtest
//! --no-default-features --test cel_feature`, which `.ci/run` runs) such a CRD — a rule in any
//! version, however deep — and a ValidatingAdmissionPolicy or its binding are refused on create,
//! update and patch with a 422 naming the feature, and nothing is stored; an environment given
//! such a CRD does not start, and says why. On both sides a CRD without rules, its `format`
//! checks (addresses and URLs parsed without CEL) and the QoS class of a Pod (quantities
//! compared exactly) behave the same. The rules themselves are tested in `cel.rs` and `vap.rs`.

mod common;

use common::invalid_message;
use ctrl_envtest::Environment;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
#[cfg(not(feature = "cel"))]
use kube::api::{Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

/// A `gauges.feature.example.com` CRD: each version's schema is `{spec: <spec schema>}`.
fn gauge_crd(versions: &[(&str, Value)]) -> CustomResourceDefinition {
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, (name, spec))| {
            json!({"name": name, "served": true, "storage": i == 0, "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"spec": spec}}}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gauges.feature.example.com"},
        "spec": {
            "group": "feature.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gauges", "singular": "gauge", "kind": "Gauge"},
            "versions": versions,
        },
    }))
    .expect("valid CRD")
}

fn gauge_api(env: &Environment) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("feature.example.com", "v1", "Gauge"),
        "gauges",
    );
    Api::namespaced_with(env.client(), "default", &ar)
}

fn gauge(name: &str, spec: Value) -> DynamicObject {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("feature.example.com", "v1", "Gauge"),
        "gauges",
    );
    DynamicObject::new(name, &ar).data(json!({ "spec": spec }))
}

/// A spec schema with no rules and three formats.
fn plain_spec() -> Value {
    json!({"type": "object", "properties": {
        "address": {"type": "string", "format": "ipv4"},
        "network": {"type": "string", "format": "cidr"},
        "endpoint": {"type": "string", "format": "uri"},
        "max": {"type": "integer"},
        "min": {"type": "integer"}}})
}

/// `plain_spec` with a rule on `spec`.
fn ruled_spec() -> Value {
    let mut s = plain_spec();
    s["x-kubernetes-validations"] =
        json!([{"rule": "self.min <= self.max", "message": "min must not exceed max"}]);
    s
}

fn policy() -> ValidatingAdmissionPolicy {
    serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "small"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
        "validations": [{"expression": "!has(object.data) || object.data.size() <= 2"}]}}))
    .expect("valid policy")
}

fn binding() -> ValidatingAdmissionPolicyBinding {
    serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "small"}, "spec": {"policyName": "small", "validationActions": ["Deny"]}}))
    .expect("valid binding")
}

#[tokio::test]
async fn crds_without_rules_check_formats_on_either_side() {
    let env = Environment::builder()
        .crd(gauge_crd(&[("v1", plain_spec())]))
        .start()
        .await
        .expect("start envtest");
    let api = gauge_api(&env);
    let good =
        json!({"address": "10.0.0.1", "network": "10.0.0.0/8", "endpoint": "https://x.io/p"});
    api.create(&PostParams::default(), &gauge("good", good))
        .await
        .expect("valid formats are stored");
    let bad = json!({"address": "::ffff:1.2.3.4", "network": "10.0.0.0/08", "endpoint": "x.io"});
    let msg = invalid_message(
        api.create(&PostParams::default(), &gauge("bad", bad))
            .await
            .expect_err("bad formats are refused"),
    );
    for want in [
        "spec.address in body must be of type ipv4: \"::ffff:1.2.3.4\"",
        "spec.network in body must be of type cidr: \"10.0.0.0/08\"",
        "spec.endpoint in body must be of type uri: \"x.io\"",
    ] {
        assert!(msg.contains(want), "{want} in {msg}");
    }
}

#[tokio::test]
async fn a_pods_qos_class_compares_quantities_exactly_on_either_side() {
    let env = common::env().await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": "1000m", "memory": "1024Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"}}}]}}))
        .expect("valid pod");
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    let qos = created.status.and_then(|s| s.qos_class);
    assert_eq!(qos.as_deref(), Some("Guaranteed"));
}

#[cfg(feature = "cel")]
#[tokio::test]
async fn with_cel_rules_and_policies_are_served() {
    let env = Environment::builder()
        .crd(gauge_crd(&[("v1", ruled_spec())]))
        .start()
        .await
        .expect("start envtest");
    let msg = invalid_message(
        gauge_api(&env)
            .create(
                &PostParams::default(),
                &gauge("g", json!({"min": 3, "max": 1})),
            )
            .await
            .expect_err("the rule refuses"),
    );
    assert!(msg.contains("min must not exceed max"), "{msg}");
    Api::<ValidatingAdmissionPolicy>::all(env.client())
        .create(&PostParams::default(), &policy())
        .await
        .expect("a policy is stored");
    Api::<ValidatingAdmissionPolicyBinding>::all(env.client())
        .create(&PostParams::default(), &binding())
        .await
        .expect("a binding is stored");
}

/// The sentence every refusal without CEL carries.
#[cfg(not(feature = "cel"))]
const NEEDS_CEL: &str = "ctrl-envtest's `cel` feature (ctrl's `envtest-cel`)";

#[cfg(not(feature = "cel"))]
#[tokio::test]
async fn without_cel_a_crd_with_rules_anywhere_is_refused_and_not_stored() {
    let env = common::env().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let nested = json!({"type": "object", "properties": {"ports": {"type": "array", "items": {
        "type": "object", "properties": {"port": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.port > 0"}]}}}});
    let mapped = json!({"type": "object", "additionalProperties": {"type": "string",
        "x-kubernetes-validations": [{"rule": "self != ''"}]}});
    let cases = [
        (
            vec![("v1", ruled_spec())],
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations",
        ),
        (
            vec![("v1", plain_spec()), ("v2", nested)],
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[ports].items.x-kubernetes-validations",
        ),
        (
            vec![("v1", mapped)],
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].additionalProperties.x-kubernetes-validations",
        ),
    ];
    for (versions, field) in cases {
        let msg = invalid_message(
            crds.create(&PostParams::default(), &gauge_crd(&versions))
                .await
                .expect_err("a CRD with rules is refused"),
        );
        assert!(
            msg.contains(&format!("{field}: Forbidden")),
            "{field} in {msg}"
        );
        assert!(msg.contains(NEEDS_CEL), "{msg}");
        assert!(
            crds.list(&Default::default())
                .await
                .expect("list")
                .items
                .is_empty()
        );
    }
}

#[cfg(not(feature = "cel"))]
#[tokio::test]
async fn without_cel_rules_added_by_update_or_patch_are_refused() {
    let env = Environment::builder()
        .crd(gauge_crd(&[("v1", plain_spec())]))
        .start()
        .await
        .expect("a CRD without rules starts");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let name = "gauges.feature.example.com";
    let stored = crds.get(name).await.expect("stored");
    let mut ruled = gauge_crd(&[("v1", ruled_spec())]);
    ruled.metadata.resource_version = stored.metadata.resource_version.clone();
    let msg = invalid_message(
        crds.replace(name, &PostParams::default(), &ruled)
            .await
            .expect_err("an update adding rules is refused"),
    );
    assert!(msg.contains(NEEDS_CEL), "{msg}");
    let patch = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": ruled_spec()}}}}]}});
    let msg = invalid_message(
        crds.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect_err("a patch adding rules is refused"),
    );
    assert!(msg.contains(NEEDS_CEL), "{msg}");
    let after = crds.get(name).await.expect("still stored");
    assert_eq!(
        after.metadata.resource_version,
        stored.metadata.resource_version
    );
    gauge_api(&env)
        .create(
            &PostParams::default(),
            &gauge("g", json!({"min": 3, "max": 1})),
        )
        .await
        .expect("no rule was stored, so none runs");
}

#[cfg(not(feature = "cel"))]
#[tokio::test]
async fn without_cel_an_environment_given_a_crd_with_rules_does_not_start() {
    let err = Environment::builder()
        .crd(gauge_crd(&[("v1", ruled_spec())]))
        .start()
        .await
        .expect_err("refused");
    let msg = err.to_string();
    assert!(msg.contains("gauges.feature.example.com"), "{msg}");
    assert!(msg.contains(NEEDS_CEL), "{msg}");
}

#[cfg(not(feature = "cel"))]
#[tokio::test]
async fn without_cel_policies_and_bindings_are_refused_and_not_stored() {
    let env = common::env().await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(env.client());
    let msg = invalid_message(
        policies
            .create(&PostParams::default(), &policy())
            .await
            .expect_err("a policy is refused"),
    );
    assert!(msg.contains("spec: Forbidden"), "{msg}");
    assert!(msg.contains(NEEDS_CEL), "{msg}");
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client());
    let msg = invalid_message(
        bindings
            .create(&PostParams::default(), &binding())
            .await
            .expect_err("a binding is refused"),
    );
    assert!(msg.contains(NEEDS_CEL), "{msg}");
    let lp = Default::default();
    assert!(policies.list(&lp).await.expect("list").items.is_empty());
    assert!(bindings.list(&lp).await.expect("list").items.is_empty());
}
