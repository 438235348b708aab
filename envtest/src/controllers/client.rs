//! The registry as the workload controllers' client — what client-go's listers and typed
//! clients are to kube-controller-manager: read a namespace's objects of one resource (as
//! `k8s_openapi` types), create, rewrite the main resource or `/status` with the resourceVersion
//! that was read as a precondition (a stale write is a 409 and the controller retries), delete.
//! Writes go through `registry::rest`, so each one is an ordinary write with a
//! resourceVersion, a watch event and the garbage collector's reaction. Also the object
//! helpers every workload controller shares: label selectors, controller references and the
//! controller-ref manager's adoption and release (upstream's `pkg/controller/controller_ref_manager.go`),
//! Pod readiness (`pkg/api/v1/pod/util.go`), int-or-percent values and times.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::meta;
use crate::api::status::ApiError;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks;
use crate::registry::rest::DeleteOpts;

/// One served built-in resource a controller reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Res {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
}

impl Res {
    const fn new(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        kind: &'static str,
    ) -> Res {
        Res {
            group,
            version,
            plural,
            kind,
        }
    }

    /// `apiVersion` of the resource's objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The served type, if the registry serves it.
    pub fn rt(&self, api: &Apiserver) -> Option<Arc<ResourceType>> {
        api.registry
            .snapshot()
            .get(self.group, self.version, self.plural)
            .cloned()
    }
}

pub(crate) const PODS: Res = Res::new("", "v1", "pods", "Pod");
pub(crate) const NODES: Res = Res::new("", "v1", "nodes", "Node");
pub(crate) const SERVICES: Res = Res::new("", "v1", "services", "Service");
pub(crate) const DAEMONSETS: Res = Res::new("apps", "v1", "daemonsets", "DaemonSet");
pub(crate) const ENDPOINTSLICES: Res =
    Res::new("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice");
pub(crate) const PVCS: Res = Res::new("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim");
pub(crate) const STATEFULSETS: Res = Res::new("apps", "v1", "statefulsets", "StatefulSet");
pub(crate) const REVISIONS: Res =
    Res::new("apps", "v1", "controllerrevisions", "ControllerRevision");
pub(crate) const DEPLOYMENTS: Res = Res::new("apps", "v1", "deployments", "Deployment");
pub(crate) const REPLICASETS: Res = Res::new("apps", "v1", "replicasets", "ReplicaSet");
pub(crate) const JOBS: Res = Res::new("batch", "v1", "jobs", "Job");
#[cfg(feature = "cronjob")]
pub(crate) const CRONJOBS: Res = Res::new("batch", "v1", "cronjobs", "CronJob");

/// (namespace, name) of an object a controller reconciles.
pub(crate) type Key = (String, String);

/// The key of a stored object.
pub(crate) fn key_of(obj: &Value) -> Key {
    (
        meta::namespace(obj).to_string(),
        meta::name(obj).to_string(),
    )
}

/// The registry, seen by a controller.
#[derive(Clone, Copy)]
pub(crate) struct Client<'a> {
    pub api: &'a Apiserver,
}

impl<'a> Client<'a> {
    /// A client of `api`.
    pub fn new(api: &'a Apiserver) -> Self {
        Client { api }
    }

    /// Every object of `res` in namespace `ns` (every namespace: `None`), as stored.
    pub fn list_values(&self, res: &Res, ns: Option<&str>) -> Vec<Value> {
        let Some(rt) = res.rt(self.api) else {
            return Vec::new();
        };
        let items = self.api.store.list(&rt.store_key(), ns, None);
        items
            .map(|(_, items)| {
                (items.iter())
                    .map(|(_, b)| crate::storage::parse(b))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object of `res` in `ns` that decodes as `T` (from a borrowed `Value`, as the
    /// registry decodes built-in types: one `Deserialize` instantiation per type).
    pub fn list<T: DeserializeOwned>(&self, res: &Res, ns: Option<&str>) -> Vec<T> {
        (self.list_values(res, ns).into_iter())
            .filter_map(|v| T::deserialize(&v).ok())
            .collect()
    }

    /// The stored object `ns/name` of `res`.
    pub fn get_value(&self, res: &Res, ns: &str, name: &str) -> Option<Value> {
        let rt = res.rt(self.api)?;
        let key = crate::registry::objects::okey(&rt, Some(ns), name);
        self.api.store.get_value(&rt.store_key(), &key)
    }

    /// Creates `obj` (apiVersion and kind are set here) in `ns`.
    pub fn create(&self, res: &Res, ns: &str, mut obj: Value) -> Result<Arc<Value>, ApiError> {
        let rt = res.rt(self.api).ok_or_else(|| not_served(res))?;
        obj["apiVersion"] = json!(res.api_version());
        obj["kind"] = json!(res.kind);
        let ns = rt.namespaced.then_some(ns);
        hooks::create_object(self.api, &rt, ns, obj, Default::default()).map(|c| c.obj)
    }

    /// Rewrites the object `obj` names (main resource, or `sub` such as `status`) with `f`,
    /// on the condition that it is still at `obj`'s resourceVersion (else 409).
    pub fn update(
        &self,
        res: &Res,
        obj: &Value,
        sub: Option<&str>,
        f: impl FnOnce(&mut Value),
    ) -> Result<Arc<Value>, ApiError> {
        let rt = res.rt(self.api).ok_or_else(|| not_served(res))?;
        let rv = meta::meta_str(obj, "resourceVersion")
            .unwrap_or("")
            .to_string();
        let ns = rt.namespaced.then(|| meta::namespace(obj));
        let name = meta::name(obj);
        let (out, _) = hooks::update_object(
            self.api,
            &rt,
            ns,
            name,
            sub,
            Default::default(),
            false,
            |cur| {
                if meta::meta_str(cur, "resourceVersion") != Some(rv.as_str()) {
                    return Err(ApiError::conflict(res.group, res.plural, name));
                }
                let mut v = cur.clone();
                f(&mut v);
                Ok(v)
            },
        )?;
        Ok(out.obj)
    }

    /// Deletes the object `obj` names (if it is still the one with its uid), with the
    /// propagation `policy` (`None`: the server's default, Background).
    pub fn delete(&self, res: &Res, obj: &Value, policy: Option<&str>) -> Result<(), ApiError> {
        let rt = res.rt(self.api).ok_or_else(|| not_served(res))?;
        let opts = DeleteOpts {
            uid: meta::meta_str(obj, "uid").map(String::from),
            policy: policy.map(String::from),
            ..Default::default()
        };
        let ns = rt.namespaced.then(|| meta::namespace(obj));
        hooks::delete_object(self.api, &rt, ns, meta::name(obj), &opts).map(|_| ())
    }
}

fn not_served(res: &Res) -> ApiError {
    ApiError::not_found(res.group, res.plural, "")
}

/// A `metav1.LabelSelector` against labels: `matchLabels` and `matchExpressions` all hold
/// (an empty selector matches everything; an unknown operator nothing).
pub(crate) fn selector_matches(
    sel: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k));
    let labels_hold = (sel.match_labels.iter().flatten()).all(|(k, v)| get(k) == Some(v));
    labels_hold
        && sel.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or_default();
            match (e.operator.as_str(), get(&e.key)) {
                ("In", Some(v)) => values.contains(v),
                ("NotIn", v) => v.is_none_or(|v| !values.contains(v)),
                ("Exists", v) => v.is_some(),
                ("DoesNotExist", v) => v.is_none(),
                _ => false,
            }
        })
}

/// Whether a selector selects nothing at all (upstream: a nil selector, or one that fails to
/// convert) — an empty one selects everything, which workload validation forbids.
pub(crate) fn selector_usable(sel: Option<&LabelSelector>) -> bool {
    sel.is_some_and(|s| {
        s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
            || s.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
    })
}

/// The owner reference with `controller: true` of a JSON object.
pub(crate) fn controller_ref_value(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| refs.iter().find(|r| r["controller"] == json!(true)))
}

/// A controller reference to `owner` (upstream's `metav1.NewControllerRef`).
pub(crate) fn new_controller_ref(owner: &Value, res: &Res) -> Value {
    json!({"apiVersion": res.api_version(), "kind": res.kind, "name": meta::name(owner),
        "uid": meta::meta_str(owner, "uid").unwrap_or(""),
        "controller": true, "blockOwnerDeletion": true})
}

/// What the controller-ref manager does with one candidate object of an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Controlled by the owner and selected: it is the owner's.
    Owned,
    /// An orphan the owner selects: adopt it (when the owner is not being deleted).
    Adopt,
    /// Controlled by the owner but no longer selected: release it.
    Release,
    /// Someone else's, or not selected.
    Ignore,
}

/// The controller-ref manager's decision (`ClaimObject`) for `obj` and an owner with `uid`.
pub(crate) fn claim(owner_uid: &str, selected: bool, obj: &Value) -> Claim {
    match controller_ref_value(obj) {
        Some(r) if r["uid"] == owner_uid => {
            if selected {
                Claim::Owned
            } else {
                Claim::Release
            }
        }
        Some(_) => Claim::Ignore,
        None if selected && meta::meta_str(obj, "deletionTimestamp").is_none() => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// Adopts (`owner` given: adds its controller reference) or releases (removes every
/// reference to `owner_uid`) the stored object `obj` of `res`.
pub(crate) fn set_controller(
    c: &Client<'_>,
    res: &Res,
    obj: &Value,
    owner_uid: &str,
    owner: Option<Value>,
) -> Result<Arc<Value>, ApiError> {
    c.update(res, obj, None, |v| {
        let mut refs: Vec<Value> = (v.pointer("/metadata/ownerReferences"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        refs.retain(|r| r["uid"] != owner_uid);
        refs.extend(owner);
        meta::set_meta(v, "ownerReferences", json!(refs));
    })
}

/// Claims the candidates of an owner: adopts the orphans it selects (unless `deleting`),
/// releases those it controls and no longer selects; returns what it then owns.
pub(crate) fn claim_all(
    c: &Client<'_>,
    res: &Res,
    owner: &Value,
    owner_res: &Res,
    selects: impl Fn(&Value) -> bool,
    candidates: Vec<Value>,
) -> Vec<Value> {
    let uid = meta::meta_str(owner, "uid").unwrap_or("");
    let deleting = meta::meta_str(owner, "deletionTimestamp").is_some();
    let mut owned = Vec::new();
    for obj in candidates {
        match claim(uid, selects(&obj), &obj) {
            Claim::Owned => owned.push(obj),
            Claim::Adopt if !deleting => {
                let r = new_controller_ref(owner, owner_res);
                if let Ok(v) = set_controller(c, res, &obj, uid, Some(r)) {
                    owned.push(Value::clone(&v));
                }
            }
            Claim::Release => {
                let _ = set_controller(c, res, &obj, uid, None);
            }
            _ => {}
        }
    }
    owned
}

/// The labels of a JSON object as a map.
pub(crate) fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    (obj.pointer("/metadata/labels").and_then(Value::as_object))
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `sel` (a usable selector) selects the JSON object `obj`.
pub(crate) fn selects(sel: Option<&LabelSelector>, obj: &Value) -> bool {
    selector_usable(sel) && sel.is_some_and(|s| selector_matches(s, Some(&labels_of(obj))))
}

/// A Pod's phase.
pub(crate) fn pod_phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Upstream's `IsPodActive`: not `Succeeded` / `Failed` and not being deleted.
pub(crate) fn pod_active(pod: &Value) -> bool {
    !matches!(pod_phase(pod), "Succeeded" | "Failed")
        && meta::meta_str(pod, "deletionTimestamp").is_none()
}

/// A Pod's condition of `type_`.
pub(crate) fn pod_condition<'p>(pod: &'p Value, type_: &str) -> Option<&'p Value> {
    (pod.pointer("/status/conditions").and_then(Value::as_array))
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
}

/// Upstream's `IsPodReady`: the `Ready` condition is `True`.
pub(crate) fn pod_ready(pod: &Value) -> bool {
    pod_condition(pod, "Ready").is_some_and(|c| c["status"] == "True")
}

/// Upstream's `IsPodAvailable`: ready for at least `min_ready` seconds at `now`.
pub(crate) fn pod_available(pod: &Value, min_ready: i64, now: Timestamp) -> bool {
    if !pod_ready(pod) {
        return false;
    }
    if min_ready <= 0 {
        return true;
    }
    let since = pod_condition(pod, "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(parse_time);
    since.is_some_and(|t| t + SignedDuration::from_secs(min_ready) <= now)
}

/// An RFC 3339 time as the API writes it.
pub(crate) fn parse_time(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

/// Now, as a `metav1.Time` (seconds precision when written).
pub(crate) fn now_time() -> Time {
    Time(ctrl_clock::now())
}

/// An `IntOrString` (an int or a `"25%"` percentage) of `total`, rounding a percentage up
/// or down (upstream's `intstr.GetScaledValueFromIntOrPercent`); `default` when absent or
/// invalid.
pub(crate) fn int_or_percent(v: Option<&Value>, total: i64, round_up: bool, default: &str) -> i64 {
    let scaled = |v: &Value| -> Option<i64> {
        if let Some(i) = v.as_i64() {
            return Some(i);
        }
        let p: i64 = v.as_str()?.strip_suffix('%')?.parse().ok()?;
        let x = p * total;
        Some(if round_up {
            (x + 99).div_euclid(100)
        } else {
            x.div_euclid(100)
        })
    };
    v.and_then(scaled)
        .or_else(|| scaled(&json!(default)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_as_upstream() {
        assert_eq!(int_or_percent(Some(&json!("25%")), 10, true, "0"), 3);
        assert_eq!(int_or_percent(Some(&json!("25%")), 10, false, "0"), 2);
        assert_eq!(int_or_percent(Some(&json!(4)), 10, false, "0"), 4);
        assert_eq!(int_or_percent(None, 4, true, "25%"), 1);
        assert_eq!(int_or_percent(Some(&json!("x")), 4, false, "25%"), 1);
    }

    #[test]
    fn claims_follow_the_controller_ref_manager() {
        let mine = json!({"metadata": {"ownerReferences": [{"uid": "u", "controller": true}]}});
        let theirs = json!({"metadata": {"ownerReferences": [{"uid": "v", "controller": true}]}});
        let orphan = json!({"metadata": {}});
        assert_eq!(claim("u", true, &mine), Claim::Owned);
        assert_eq!(claim("u", false, &mine), Claim::Release);
        assert_eq!(claim("u", true, &theirs), Claim::Ignore);
        assert_eq!(claim("u", true, &orphan), Claim::Adopt);
        assert_eq!(claim("u", false, &orphan), Claim::Ignore);
    }
}
