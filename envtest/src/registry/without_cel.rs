//! Built without the `cel` feature: the writes that need CEL, refused. A CRD whose schema has
//! `x-kubernetes-validations` (in any version, at any depth: `properties`, `items`,
//! `additionalProperties`, `allOf` / `anyOf` / `oneOf` / `not`, ...) and a
//! ValidatingAdmissionPolicy or its binding get a 422 `Invalid` whose cause is a `Forbidden` at
//! the field and names the feature, on create, update, patch and apply alike, and nothing is
//! stored. [`super::strategy`] asks [`causes`] where, built with the feature, it compiles the
//! CEL (`cel::crd`, `cel::policy`).
//!
//! Why a 422 with a `Forbidden` cause: it is how kube-apiserver refuses a schema it cannot serve
//! (apiextensions' structural check: `x-kubernetes-validations: Forbidden: must be empty to be
//! structural`, `apiextensions-apiserver/pkg/apiserver/schema/validation.go`) and how it refuses
//! a field whose feature is off; the client sees which field and why. Not serving the policy
//! types at all (a 404, as for an API group turned off) would hide the reason. Storing the CRD
//! and ignoring its rules (what upstream did while the feature gate was off) would let a test
//! pass that a real API server fails.

use serde_json::Value;

use crate::api::validation::FieldCause;

use super::ResourceType;

/// What every refusal says.
const NEEDS: &str = "needs CEL, which this ctrl-envtest is built without: turn on ctrl-envtest's `cel` feature (ctrl's `envtest-cel`)";

/// The causes of a 422 for a write of `obj` that needs CEL; none for any other write.
pub(crate) fn causes(rt: &ResourceType, obj: &Value) -> Vec<FieldCause> {
    if super::crd::is_crd_type(rt) {
        return crd_rules(obj);
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies" | "validatingadmissionpolicybindings",
        ) => vec![FieldCause::forbidden(
            "spec",
            &format!("{} {NEEDS}", rt.kind),
        )],
        _ => Vec::new(),
    }
}

/// A `Forbidden` for every `x-kubernetes-validations` of every version's schema.
fn crd_rules(crd: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    for (i, v) in versions.into_iter().flatten().enumerate() {
        if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
            let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
            walk(s, &base, &mut out);
        }
    }
    out
}

/// One schema node and every schema under it (not `default`, `enum` or `example`, which are
/// values).
fn walk(schema: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    let key = "x-kubernetes-validations";
    if map
        .get(key)
        .is_some_and(|r| r.as_array().is_none_or(|r| !r.is_empty()))
    {
        out.push(FieldCause::forbidden(
            format!("{path}.{key}"),
            &format!("a rule {NEEDS}"),
        ));
    }
    for k in [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ] {
        for (name, s) in map.get(k).and_then(Value::as_object).into_iter().flatten() {
            walk(s, &format!("{path}.{k}[{name}]"), out);
        }
    }
    for k in ["additionalProperties", "additionalItems", "not", "items"] {
        if let Some(s) = map.get(k).filter(|s| s.is_object()) {
            walk(s, &format!("{path}.{k}"), out);
        }
    }
    for k in ["allOf", "anyOf", "oneOf", "items"] {
        for (i, s) in map
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(s, &format!("{path}.{k}[{i}]"), out);
        }
    }
}
