//! The CustomResourceDefinition strategy
//! (`k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/strategy.go`). Creating
//! or updating a CRD validates it, defaults its names, sets its status (NamesAccepted, Established,
//! acceptedNames, storedVersions) and — before the response is written — registers its served
//! versions in the registry ([`after_commit`]), so routing, discovery and OpenAPI see them at once.
//! Deleting a CRD marks it `Terminating` ([`mark_terminating`]); it is held by the
//! [`CLEANUP_FINALIZER`] until the CRD cleanup controller
//! ([`controllers::crd_cleanup`](crate::controllers::crd_cleanup)) has deleted its custom
//! resources, and when it is removed its watches end and its routes go away. Custom objects are
//! validated against the version's `openAPIV3Schema` ([`validate_custom`], [`super::schema`]) and
//! its CEL rules ([`crate::cel`]). `spec.conversion` is validated as upstream does
//! ([`super::conversion::validate`]); a CRD with `strategy: Webhook` registers its `Conversion`
//! with its types. Calls `api`, `storage` and the registry only.

use std::sync::Arc;

use serde_json::{Value, json};

use super::context::Apiserver;
use super::{ResourceType, ScaleSpec, schema};
use crate::api::meta;
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;

/// The finalizer that holds a CRD until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub(crate) fn is_crd_type(rt: &ResourceType) -> bool {
    rt.is("apiextensions.k8s.io", "customresourcedefinitions")
}

fn s<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// Validates and completes a CRD being written (create when `old` is `None`).
pub(crate) fn on_write(
    rt: &ResourceType,
    old: Option<&Value>,
    obj: &mut Value,
) -> Result<(), ApiError> {
    if !is_crd_type(rt) {
        return Ok(());
    }
    let name = meta::name(obj).to_string();
    let mut causes = causes(obj, &name);
    causes.extend(super::conversion::validate(obj));
    if let Some(old) = old {
        causes.extend(update_causes(old, obj));
    }
    rt.invalid_if_any(&name, &causes)?;
    complete(obj, old);
    Ok(())
}

/// What is wrong with a CRD's names, scope and versions (apiextensions'
/// `ValidateCustomResourceDefinition`, the part ctrl-envtest checks).
fn causes(obj: &Value, name: &str) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let group = s(obj, "/spec/group").to_string();
    let plural = s(obj, "/spec/names/plural").to_string();
    let kind = s(obj, "/spec/names/kind").to_string();
    if plural.is_empty() {
        causes.push(FieldCause::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(FieldCause::required("spec.names.kind", ""));
    }
    if group.is_empty() {
        causes.push(FieldCause::required("spec.group", ""));
    } else if !group.contains('.') {
        causes.push(FieldCause::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if name != format!("{plural}.{group}") {
        causes.push(FieldCause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let scope = s(obj, "/spec/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(FieldCause::not_supported(
            "spec.scope",
            &json!(scope),
            &[json!("Cluster"), json!("Namespaced")],
        ));
    }
    causes.extend(version_causes(obj));
    causes
}

/// A CRD's versions: exactly one storage version, each with a name and a schema.
fn version_causes(obj: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let versions = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions
        .iter()
        .filter(|v| v.get("storage") == Some(&json!(true)))
        .count()
        != 1
    {
        causes.push(FieldCause::invalid(
            "spec.versions",
            &json!(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if s(v, "/name").is_empty() {
            causes.push(FieldCause::required(format!("spec.versions[{i}].name"), ""));
        }
        if v.pointer("/schema/openAPIV3Schema").is_none() {
            causes.push(FieldCause::required(
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            ));
        }
    }
    causes
}

/// The defaults and status of a valid CRD: singular and list kind names, stored versions,
/// conditions (kept from `old`), accepted names, and the cleanup finalizer on a create.
fn complete(obj: &mut Value, old: Option<&Value>) {
    let kind = s(obj, "/spec/names/kind").to_string();
    let versions = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if s(obj, "/spec/names/singular").is_empty() {
        obj["spec"]["names"]["singular"] = json!(kind.to_ascii_lowercase());
    }
    if s(obj, "/spec/names/listKind").is_empty() {
        obj["spec"]["names"]["listKind"] = json!(format!("{kind}List"));
    }
    let storage = versions
        .iter()
        .find(|v| v.get("storage") == Some(&json!(true)))
        .map(|v| s(v, "/name").to_string())
        .unwrap_or_default();
    let mut stored = stored_versions(obj, old);
    if !stored.contains(&json!(storage)) {
        stored.push(json!(storage));
    }
    let conditions = match old.and_then(|o| o.pointer("/status/conditions")) {
        Some(c) => c.clone(),
        None => {
            let now = meta::now();
            json!([
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
            ])
        }
    };
    let accepted = obj.pointer("/spec/names").cloned().unwrap_or_default();
    obj["status"] =
        json!({"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored});
    if old.is_none() {
        let mut f = meta::finalizers(obj);
        if !f.iter().any(|x| x == CLEANUP_FINALIZER) {
            f.push(CLEANUP_FINALIZER.into());
        }
        meta::set_meta(obj, "finalizers", json!(f));
    }
}

/// The rules upstream adds for a CRD update (apiextensions'
/// `ValidateCustomResourceDefinitionUpdate`): `spec.group` and `spec.names.plural` never change
/// (they name the storage), an established CRD keeps its `spec.scope` and `spec.names.kind`
/// (objects stored under them would become unreadable), and every version in
/// `status.storedVersions` stays in `spec.versions`.
fn update_causes(old: &Value, new: &Value) -> Vec<FieldCause> {
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| s(c, "/type") == "Established" && s(c, "/status") == "True");
    let mut fixed = vec![
        ("/spec/group", "spec.group"),
        ("/spec/names/plural", "spec.names.plural"),
    ];
    if established {
        fixed.extend([
            ("/spec/scope", "spec.scope"),
            ("/spec/names/kind", "spec.names.kind"),
        ]);
    }
    let mut causes: Vec<FieldCause> = fixed
        .into_iter()
        .filter(|(path, _)| new.pointer(path) != old.pointer(path))
        .map(|(path, field)| {
            let v = new.pointer(path).cloned().unwrap_or(Value::Null);
            FieldCause::invalid(field, &v, "field is immutable")
        })
        .collect();
    let served: Vec<&str> = new
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| s(v, "/name"))
        .collect();
    for (i, v) in stored_versions(new, Some(old)).iter().enumerate() {
        if !v.as_str().is_some_and(|v| served.contains(&v)) {
            let field = format!("status.storedVersions[{i}]");
            causes.push(FieldCause::invalid(
                field,
                v,
                "must appear in spec.versions",
            ));
        }
    }
    causes
}

/// `status.storedVersions` of a CRD being updated: the written one (a `/status` write may lower
/// it, as upstream's storage-migration procedure does), else the stored one; none on create.
fn stored_versions(new: &Value, old: Option<&Value>) -> Vec<Value> {
    let old = match old {
        Some(o) => o,
        None => return Vec::new(),
    };
    new.pointer("/status/storedVersions")
        .or_else(|| old.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Adds the `Terminating` condition to a CRD whose deletion starts.
pub(crate) fn mark_terminating(crd: &mut Value) {
    if !crd.get("status").is_some_and(Value::is_object) {
        crd["status"] = json!({});
    }
    let mut conds = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conds.retain(|c| c.get("type") != Some(&json!("Terminating")));
    conds.push(json!({
        "type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
        "message": "CustomResource deletion is in progress", "lastTransitionTime": meta::now(),
    }));
    crd["status"]["conditions"] = json!(conds);
}

/// Where a CRD's objects are stored, whichever versions are served.
pub(crate) fn store_key_of(crd: &Value) -> crate::registry::StoreKey {
    crate::storage::store_key(s(crd, "/spec/group"), s(crd, "/spec/names/plural"))
}

/// The resource types a CRD serves.
pub(crate) fn types_of(crd: &Value) -> Vec<ResourceType> {
    versions_of(crd)
        .iter()
        .filter(|v| v.get("served") != Some(&json!(false)))
        .map(|v| type_of(crd, v))
        .collect()
}

/// The webhook conversion of a CRD with `conversion.strategy: Webhook`.
pub(crate) fn conversion_of(crd: &Value) -> Option<super::conversion::Conversion> {
    let versions = versions_of(crd);
    let storage = versions
        .iter()
        .find(|v| v.get("storage") == Some(&json!(true)))?;
    super::conversion::Conversion::of_crd(crd, Arc::new(type_of(crd, storage)))
}

fn versions_of(crd: &Value) -> Vec<Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The resource type of one version `v` of a CRD.
fn type_of(crd: &Value, v: &Value) -> ResourceType {
    let group = s(crd, "/spec/group").to_string();
    let names = crd.pointer("/spec/names").cloned().unwrap_or_default();
    let strs = |k: &str| -> Vec<String> {
        names
            .get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let storage = versions_of(crd)
        .iter()
        .find(|v| v.get("storage") == Some(&json!(true)))
        .map(|v| s(v, "/name").to_string())
        .unwrap_or_default();
    let subs = v.get("subresources");
    let schema = v.pointer("/schema/openAPIV3Schema").cloned().map(Arc::new);
    ResourceType {
        group: group.clone(),
        version: s(v, "/name").to_string(),
        kind: s(&names, "/kind").to_string(),
        list_kind: s(&names, "/listKind").to_string(),
        plural: s(&names, "/plural").to_string(),
        singular: s(&names, "/singular").to_string(),
        namespaced: s(crd, "/spec/scope") == "Namespaced",
        short_names: strs("shortNames"),
        categories: strs("categories"),
        status: subs.and_then(|x| x.get("status")).is_some(),
        scale: subs.and_then(|x| x.get("scale")).map(|sc| ScaleSpec {
            spec_replicas: s(sc, "/specReplicasPath").to_string(),
            status_replicas: s(sc, "/statusReplicasPath").to_string(),
            label_selector: sc
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(String::from),
        }),
        generation: true,
        crd: Some(meta::name(crd).to_string()),
        rules: has_rules(schema.as_deref()),
        schema,
        storage_version: format!("{group}/{storage}"),
        virtual_create: false,
        decode: None,
        view: None,
        fields: v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|f| s(f, "/jsonPath").trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Validates a custom object against its version's schema (prunes unknown fields, defaults),
/// then its CEL rules; `old` is the stored object on update (transition rules, ratcheting).
/// A write of `/status` (`status_write`) checks only `status` against the schema, as upstream's
/// status strategy does (`customResourceValidator.ValidateStatusUpdate`, whose
/// `statusSchemaValidator` is the schema's `properties.status`): the rest is the stored object's.
/// Pruning, defaults and the CEL rules still cover the whole object.
pub(crate) fn validate_custom(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    strict: bool,
    status_write: bool,
) -> Result<(), ApiError> {
    let (Some(_), Some(sch)) = (&rt.crd, &rt.schema) else {
        return Ok(());
    };
    let unknown = schema::prune(sch, obj);
    if strict && !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            list.join(", ")
        )));
    }
    schema::apply_defaults(sch, obj);
    let causes = schema_and_rules(rt, sch, obj, old, status_write);
    rt.invalid_if_any(meta::name(obj), &causes)
}

/// The schema's checks and then its CEL rules (`cel::rules`), as apiextensions' strategy
/// runs them: on update, errors about values left unchanged are ratcheted away
/// ([`super::ratchet`]); rules are not run on an object with type or required-field errors, nor
/// looked for when the schema has none ([`ResourceType::rules`]).
fn schema_and_rules(
    rt: &ResourceType,
    sch: &Value,
    obj: &Value,
    old: Option<&Value>,
    status_write: bool,
) -> Vec<FieldCause> {
    let mut causes = if status_write {
        schema::validate_status(sch, obj)
    } else {
        schema::validate(sch, obj)
    };
    if let Some(old) = old {
        causes.retain(|c| super::ratchet::keep(&c.field, obj, old));
    }
    if rt.rules {
        rules(sch, obj, old, &mut causes);
    }
    causes
}

/// The schema's CEL rules, after its other checks' `causes`.
#[cfg(feature = "cel")]
fn rules(sch: &Value, obj: &Value, old: Option<&Value>, causes: &mut Vec<FieldCause>) {
    let blocking = ["FieldValueTypeInvalid", "FieldValueRequired"];
    if causes.iter().any(|c| blocking.contains(&c.reason)) {
        let detail = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
        causes.push(FieldCause::invalid("<nil>", &Value::Null, detail));
        return;
    }
    let outcome = crate::cel::rules::validate(sch, obj, old);
    for w in &outcome.warnings {
        tracing::debug!(warning = %w, "a CEL rule failed on an unchanged value: ratcheted");
    }
    causes.extend(outcome.errors);
}

/// Built without the `cel` feature no stored CRD has rules: a CRD with any is refused when it
/// is written ([`super::without_cel`]).
#[cfg(not(feature = "cel"))]
fn rules(_: &Value, _: &Value, _: Option<&Value>, _: &mut Vec<FieldCause>) {}

/// Whether a CRD version's schema has CEL rules ([`ResourceType::rules`]).
#[cfg(feature = "cel")]
fn has_rules(schema: Option<&Value>) -> bool {
    schema.is_some_and(crate::cel::rules::has_rules)
}

/// Built without the `cel` feature no stored CRD has rules ([`super::without_cel`]).
#[cfg(not(feature = "cel"))]
fn has_rules(_: Option<&Value>) -> bool {
    false
}

/// The registry's side of a committed write: a CRD written (re)registers its types and
/// conversion, a CRD removed unregisters them, ends its watches and drops its objects; a custom
/// object written while its CRD went away goes with it. Runs for every write, controllers or
/// not (apiextensions-apiserver does this itself).
pub(crate) fn after_commit(api: &Apiserver, rt: &ResourceType, obj: &Value, removed: bool) {
    if is_crd_type(rt) {
        let name = meta::name(obj);
        if removed {
            api.registry.set_crd(name, Vec::new(), None);
            let key = store_key_of(obj);
            api.store.close_watches(&key);
            api.store.drop_collection(&key);
        } else {
            api.registry
                .set_crd(name, types_of(obj), conversion_of(obj));
        }
    } else if let Some(crd) = &rt.crd
        && !removed
        && !api
            .registry
            .snapshot()
            .types
            .iter()
            .any(|t| t.crd.as_deref() == Some(crd.as_str()))
    {
        // The CRD went away while this write was in flight: its objects go with it.
        api.store.drop_collection(&rt.store_key());
    }
}
