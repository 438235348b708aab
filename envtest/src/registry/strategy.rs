//! Per-kind rules of the generic write path (kube-apiserver's `RESTCreateStrategy` /
//! `RESTUpdateStrategy` / `RESTDeleteStrategy` of a few kinds:
//! `k8s.io/apiserver/pkg/registry/rest/{create,update,delete}.go`,
//! `k8s.io/kubernetes/pkg/registry/core/{namespace,secret,pod}/strategy.go`): generic metadata and
//! data validation ([`validate`]) and the CRD schema checks, Secret `stringData` folded into
//! `data`, Namespace label / finalizer / phase ([`normalize`]), the namespace a create needs
//! ([`ensure_namespace`]), the status subresource rules ([`status_rules`]) and the graceful
//! deletion of Pods when the kubelet is simulated ([`pod_graceful_delete`]). CRDs have their own
//! strategy ([`super::crd`]). Used by [`super::rest`]; calls `api` and `storage` only.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::ResourceType;
use crate::api::meta;
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::storage::{Change, Store};

use super::defaults::pod::DEFAULT_GRACE;

/// Normalises a built-in object before it is stored (create and update).
pub(crate) fn normalize(rt: &ResourceType, obj: &mut Value, create: bool) {
    if rt.is("", "secrets") {
        if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = json!({});
            }
            for (k, v) in sd {
                let s = v.as_str().unwrap_or_default();
                obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(s));
            }
        }
        if create && obj.get("type").is_none() {
            obj["type"] = json!("Opaque");
        }
    }
    if rt.is("", "namespaces") {
        let name = crate::api::meta::name(obj).to_string();
        let m = crate::api::meta::meta_mut(obj);
        if !m.get("labels").is_some_and(Value::is_object) {
            m.insert("labels".into(), json!({}));
        }
        m["labels"]["kubernetes.io/metadata.name"] = json!(name);
        if create {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
    }
}

/// Namespaced creates need an existing namespace that is not terminating.
pub(crate) fn ensure_namespace(
    store: &Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let key = crate::storage::store_key("", "namespaces");
    match store.get(&key, &crate::storage::obj_key("", ns)) {
        None => Err(ApiError::new(404, "NotFound", format!("namespaces {ns:?} not found")).with_details(json!({"name": ns, "kind": "namespaces"}))),
        Some(n) if terminating(&n) => Err(ApiError::new(
            403,
            "Forbidden",
            format!("{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated", rt.plural),
        )
        .with_details(json!({"name": name, "kind": rt.plural, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}))),
        Some(_) => Ok(()),
    }
}

/// Whether a stored Namespace carries a deletionTimestamp, read without building the whole
/// object (every namespaced create asks). The store's bytes are serde_json's, which writes a key
/// as it is (it escapes only quotes, backslashes and control characters), so a namespace whose
/// bytes lack the text `"deletionTimestamp"` has no such field and is not read at all. The
/// searcher is built once (building one cost more than the search).
fn terminating(stored: &[u8]) -> bool {
    static FIELD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"deletionTimestamp\""));
    if FIELD.find(stored).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Meta>,
    }
    serde_json::from_slice::<Object>(stored)
        .ok()
        .and_then(|o| o.metadata)
        .is_some_and(|m| m.deletion_timestamp.is_some())
}

/// The structural checks of every version's `openAPIV3Schema` of a CRD (`schema::check_schema`),
/// as the apiextensions server validates them on create and update.
fn crd_schema_causes(crd: &Value) -> Vec<crate::api::validation::FieldCause> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let s = v.pointer("/schema/openAPIV3Schema")?;
            let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
            Some(super::schema::check_schema(s, &base))
        })
        .flatten()
        .collect()
}

/// The CEL expressions of a CRD ([`crate::cel::crd`], once its schemas are structural) or of a
/// ValidatingAdmissionPolicy ([`crate::cel::policy`]) that do not compile or cost too much.
#[cfg(feature = "cel")]
fn cel_causes(rt: &ResourceType, obj: &Value, so_far: &[FieldCause]) -> Vec<FieldCause> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("apiextensions.k8s.io", "customresourcedefinitions") if so_far.is_empty() => {
            crate::cel::crd::check_crd(obj)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            crate::cel::policy::check_policy(obj.get("spec").unwrap_or(&Value::Null))
        }
        _ => Vec::new(),
    }
}

/// Built without the `cel` feature: a CRD with CEL rules, a ValidatingAdmissionPolicy or its
/// binding, which need it ([`super::without_cel`]).
#[cfg(not(feature = "cel"))]
fn cel_causes(rt: &ResourceType, obj: &Value, _so_far: &[FieldCause]) -> Vec<FieldCause> {
    super::without_cel::causes(rt, obj)
}

/// Generic metadata/data validation, then the CRD schema for custom resources.
pub(crate) fn validate(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    if let Some(go_type) = &rt.decode {
        super::builtins::decode::check(go_type, obj).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                rt.kind, rt.version, rt.kind
            ))
        })?;
    }
    let mut causes = crate::api::validation::validate_object(
        &rt.group,
        &rt.plural,
        &rt.kind,
        rt.namespaced,
        obj,
    );
    if super::crd::is_crd_type(rt) {
        causes.extend(crd_schema_causes(obj));
    }
    causes.extend(cel_causes(rt, obj, &causes));
    rt.invalid_if_any(meta::name(obj), &causes)
}
/// What a write through the subresource `sub` may change: `/status` (see [`status_rules`]),
/// a CSR's `/approval` (the status conditions and metadata: `csrApprovalStrategy`), a Pod's
/// `/ephemeralcontainers` (`spec.ephemeralContainers` only: `podEphemeralContainersStrategy`).
/// A CSR's main resource and `/status` keep its spec (`csrStrategy`).
pub(crate) fn subresource_rules(
    cur: &Value,
    mut new: Value,
    rt: &ResourceType,
    sub: Option<&str>,
) -> Value {
    let is_csr = rt.is("certificates.k8s.io", "certificatesigningrequests");
    match sub {
        Some("approval") => {
            let conditions = new.pointer("/status/conditions").cloned();
            new["spec"] = cur.get("spec").cloned().unwrap_or(Value::Null);
            new["status"] = cur.get("status").cloned().unwrap_or(json!({}));
            match conditions {
                Some(c) => new["status"]["conditions"] = c,
                None => {
                    if let Some(s) = new["status"].as_object_mut() {
                        s.remove("conditions");
                    }
                }
            }
            condition_timestamps(&mut new);
        }
        Some("ephemeralcontainers") => {
            let eph = new.pointer("/spec/ephemeralContainers").cloned();
            let mut merged = cur.clone();
            if let Some(mf) = new.pointer("/metadata/managedFields") {
                meta::set_meta(&mut merged, "managedFields", mf.clone());
            }
            match eph {
                Some(e) => merged["spec"]["ephemeralContainers"] = e,
                None => {
                    if let Some(s) = merged["spec"].as_object_mut() {
                        s.remove("ephemeralContainers");
                    }
                }
            }
            new = merged;
        }
        // A binding (the simulated scheduler's, `pods/binding`) writes spec and status at once.
        Some("binding") => {}
        _ => {
            new = status_rules(cur, new, rt, sub == Some("status"));
            if is_csr {
                new["spec"] = cur.get("spec").cloned().unwrap_or(Value::Null);
            }
        }
    }
    new
}

/// `populateConditionTimestamps`: a CSR condition without `lastUpdateTime` /
/// `lastTransitionTime` gets now.
fn condition_timestamps(csr: &mut Value) {
    let now = meta::now();
    for c in csr
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for k in ["lastUpdateTime", "lastTransitionTime"] {
            if c.get(k).is_none_or(Value::is_null) {
                c[k] = json!(now);
            }
        }
    }
}

/// The status subresource rules: a `/status` write changes only status (and managedFields);
/// a write of the main resource of a type with a status subresource keeps the stored status.
/// Upstream's status strategies copy the old object over the new one (`PrepareForUpdate`); here
/// `new` is set back to `cur` in place, copying only what differs (a status patch leaves the rest
/// equal, so nothing is copied).
fn status_rules(cur: &Value, mut new: Value, rt: &ResourceType, status_write: bool) -> Value {
    if status_write {
        if !keep_only_status(cur, &mut new) {
            // Not objects (never stored so): the plain copy.
            let mut merged = cur.clone();
            if let Some(mf) = new.pointer_mut("/metadata/managedFields") {
                meta::set_meta(&mut merged, "managedFields", mf.take());
            }
            set_or_remove(
                &mut merged,
                "status",
                new.get_mut("status").map(Value::take),
            );
            new = merged;
        }
    } else if rt.status && new.get("status") != cur.get("status") {
        set_or_remove(&mut new, "status", cur.get("status").cloned());
    }
    new
}

/// Sets `new` to `cur` but for its status and managedFields (the stored ones when `new` has
/// none); false, changing nothing, when either object or its metadata is not a JSON object.
fn keep_only_status(cur: &Value, new: &mut Value) -> bool {
    let (Some(c), Some(n)) = (cur.as_object(), new.as_object_mut()) else {
        return false;
    };
    let (Some(cm), Some(Value::Object(nm))) = (
        c.get("metadata").and_then(Value::as_object),
        n.get_mut("metadata"),
    ) else {
        return false;
    };
    reset_from(nm, cm, |k| k == "managedFields");
    if !nm.contains_key("managedFields")
        && let Some(mf) = cm.get("managedFields")
    {
        nm.insert("managedFields".into(), mf.clone());
    }
    reset_from(n, c, |k| k == "status" || k == "metadata");
    true
}

/// Makes every field of `new` but the `kept` ones what it is in `cur` (removed where `cur` has
/// none), cloning only the values that differ.
fn reset_from(new: &mut Map<String, Value>, cur: &Map<String, Value>, kept: impl Fn(&str) -> bool) {
    new.retain(|k, _| kept(k) || cur.contains_key(k));
    for (k, v) in cur.iter().filter(|(k, _)| !kept(k)) {
        match new.get_mut(k) {
            Some(n) if n == v => {}
            Some(n) => *n = v.clone(),
            None => {
                new.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Sets `obj[field]` to `v`, or removes it for `None`.
fn set_or_remove(obj: &mut Value, field: &str, v: Option<Value>) {
    match (v, obj.as_object_mut()) {
        (Some(v), _) => obj[field] = v,
        (None, Some(o)) => {
            o.remove(field);
        }
        (None, None) => {}
    }
}

/// A namespace is held by its `spec.finalizers` too.
pub(crate) fn namespace_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    rt.is("", "namespaces")
        && obj
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}
pub(crate) fn node_name(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn finished(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// The grace period a DELETE of `pod` gets (upstream's `CheckGracefulDelete` for pods):
/// the DeleteOptions' `gracePeriodSeconds`, else `spec.terminationGracePeriodSeconds`, else
/// 30; negative becomes 1; an unbound or finished Pod gets 0.
fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    if node_name(pod).is_empty() || finished(pod) {
        return 0;
    }
    let grace = requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_GRACE);
    if grace < 0 { 1 } else { grace }
}

/// The pods part of a delete ([`super::hooks::delete_object`]): with pod simulation on
/// (`simulated`), what deleting Pod `cur` does (`new` is `cur` with the propagation policy's
/// finalizer added). `None` when the ordinary delete path applies (simulation off, not a Pod).
pub(crate) fn pod_graceful_delete(
    simulated: bool,
    rt: &ResourceType,
    cur: &Value,
    new: &Value,
    requested: Option<i64>,
) -> Option<Change> {
    if !simulated || !rt.is("", "pods") {
        return None;
    }
    let mut new = new.clone();
    let mut grace = grace_period(cur, requested);
    let pending = meta::meta_str(cur, "deletionTimestamp").is_some();
    if let Some(old) = cur
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        && pending
    {
        // A second delete may only shorten the grace period.
        grace = grace.min(old);
        if grace == old {
            return Some(Change::Put(new));
        }
    }
    if grace == 0 && meta::finalizers(&new).is_empty() {
        return Some(Change::Remove);
    }
    let at = ctrl_clock::now() + k8s_openapi::jiff::SignedDuration::from_secs(grace);
    if !pending || grace > 0 {
        meta::set_meta(
            &mut new,
            "deletionTimestamp",
            json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        );
    }
    meta::set_meta(&mut new, "deletionGracePeriodSeconds", json!(grace));
    Some(Change::Put(new))
}
