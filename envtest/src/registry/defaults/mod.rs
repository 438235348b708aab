//! Built-in defaulting and create-time status, as kube-apiserver applies them: the defaulters
//! of every served built-in group/version (upstream's `pkg/apis/<group>/<version>/defaults.go`
//! and the generated `zz_generated.defaults.go` that walks them into nested structs) and the
//! registry strategies' `PrepareForCreate` / `PrepareForUpdate`
//! (`pkg/registry/<group>/<resource>/strategy.go`), as one table keyed by (group, plural).
//!
//! Upstream defaults every object it decodes — a create, an update, a patched object — so
//! [`apply`] runs on every write of a built-in (`super::rest`), and a client that compares its
//! desired spec with the stored one sees the fields a real cluster fills. [`prepare_for_create`]
//! resets the status of the kinds whose strategy does (a Pod starts `Pending` with its QoS
//! class, a Service with `loadBalancer: {}`), generates a Job's selector, and allocates a
//! Service's cluster IPs and node ports ([`service`]). Defaults that upstream's admission
//! plugins add on a default kube-apiserver (`ServiceAccount`, `DefaultTolerationSeconds`,
//! `Priority`) are applied to Pods here too, as a client of a real cluster sees them.
//!
//! * [`pod`]: PodSpec, containers, volumes, probes, the Pod's QoS class.
//! * [`workloads`]: apps/v1 and batch/v1 (and the ReplicationController), templates included.
//! * [`service`]: Service defaults, cluster IP and node port allocation.
//! * [`others`]: the remaining groups (rbac, admissionregistration, networking, storage, ...).
//!
//! Part of the registry; calls `api`, `storage` and `cel` (quantities) only.

pub(crate) mod others;
pub(crate) mod pod;
pub(crate) mod service;
pub(crate) mod workloads;

use serde_json::{Map, Value, json};

use super::ResourceType;
use super::context::Apiserver;
use crate::api::status::ApiError;
use crate::auth::UserInfo;
use crate::storage::ObjKey;

/// Upstream's `SetObjectDefaults_<Kind>` of one resource.
type Defaulter = fn(&mut Value);

/// The defaulters of each built-in (group, plural), as upstream registers them per kind.
const DEFAULTERS: &[(&str, &str, Defaulter)] = &[
    ("", "pods", pod::pod),
    ("", "podtemplates", pod::pod_template),
    (
        "",
        "replicationcontrollers",
        workloads::replication_controller,
    ),
    ("", "services", service::defaults),
    ("", "endpoints", others::endpoints),
    ("", "persistentvolumes", others::persistent_volume),
    (
        "",
        "persistentvolumeclaims",
        others::persistent_volume_claim,
    ),
    ("", "limitranges", others::limit_range),
    ("", "nodes", others::node),
    ("apps", "deployments", workloads::deployment),
    ("apps", "replicasets", workloads::replica_set),
    ("apps", "statefulsets", workloads::stateful_set),
    ("apps", "daemonsets", workloads::daemon_set),
    ("batch", "jobs", workloads::job),
    ("batch", "cronjobs", workloads::cron_job),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        others::role_binding,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        others::role_binding,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        others::validating_webhooks,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        others::mutating_webhooks,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        others::admission_policy,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        others::admission_policy_binding,
    ),
    (
        "networking.k8s.io",
        "networkpolicies",
        others::network_policy,
    ),
    ("discovery.k8s.io", "endpointslices", others::endpoint_slice),
    ("storage.k8s.io", "storageclasses", others::storage_class),
    (
        "scheduling.k8s.io",
        "priorityclasses",
        others::priority_class,
    ),
    (
        "autoscaling",
        "horizontalpodautoscalers",
        others::horizontal_pod_autoscaler,
    ),
    ("apiregistration.k8s.io", "apiservices", others::api_service),
];

/// The zero value of a kind's status, as Go encodes it.
type ZeroStatus = fn() -> Value;

/// The kinds whose `PrepareForCreate` resets `status` to its zero value (Go encodes the empty
/// struct as `{}`, or with its own empty structs, as a Service's `loadBalancer: {}`).
const CREATE_STATUS: &[(&str, &str, ZeroStatus)] = &[
    ("", "services", || json!({"loadBalancer": {}})),
    ("", "replicationcontrollers", || json!({"replicas": 0})),
    ("", "resourcequotas", || json!({})),
    ("", "persistentvolumes", || json!({})),
    ("", "persistentvolumeclaims", || json!({})),
    ("apps", "deployments", || json!({})),
    ("apps", "replicasets", || json!({"replicas": 0})),
    (
        "apps",
        "statefulsets",
        || json!({"replicas": 0, "availableReplicas": 0}),
    ),
    (
        "apps",
        "daemonsets",
        || json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
    ),
    ("batch", "jobs", || json!({})),
    ("batch", "cronjobs", || json!({})),
    (
        "networking.k8s.io",
        "ingresses",
        || json!({"loadBalancer": {}}),
    ),
    (
        "policy",
        "poddisruptionbudgets",
        || json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
    ),
    (
        "autoscaling",
        "horizontalpodautoscalers",
        || json!({"desiredReplicas": 0}),
    ),
    ("certificates.k8s.io", "certificatesigningrequests", || {
        json!({})
    }),
    ("apiregistration.k8s.io", "apiservices", || json!({})),
];

fn built_in(rt: &ResourceType) -> bool {
    rt.crd.is_none() && rt.view.is_none()
}

/// `table`'s entry for `rt`, found by hashing (group, plural): every create and update of a
/// built-in asks, and a scan of the table's string pairs showed in the create profile.
fn lookup<T: Copy + Send + Sync + 'static>(
    index: &'static Index<T>,
    table: &'static [(&'static str, &'static str, T)],
    rt: &ResourceType,
) -> Option<T> {
    let index = index.get_or_init(|| table.iter().map(|(g, p, f)| ((*g, *p), *f)).collect());
    index.get(&(rt.group.as_str(), rt.plural.as_str())).copied()
}

type Index<T> = std::sync::OnceLock<std::collections::HashMap<(&'static str, &'static str), T>>;
static DEFAULTERS_BY_TYPE: Index<Defaulter> = std::sync::OnceLock::new();
static CREATE_STATUS_BY_TYPE: Index<ZeroStatus> = std::sync::OnceLock::new();

/// Upstream's defaulting of a decoded built-in object (`scheme.Default`): fills what the
/// client left out. Idempotent; custom resources are defaulted from their schema instead
/// (`super::schema`).
pub(crate) fn apply(rt: &ResourceType, obj: &mut Value) {
    if !built_in(rt) || !obj.is_object() {
        return;
    }
    if let Some(f) = lookup(&DEFAULTERS_BY_TYPE, DEFAULTERS, rt) {
        f(obj);
    }
}

/// The strategy's `PrepareForCreate` of a built-in, once the object has its identity (uid,
/// name): the status reset, then the kind's own rules (a Pod's phase and QoS class, a Job's
/// selector, a Service's cluster IPs and node ports, a CSR's requester `user`), then the defaults again (upstream
/// defaults the stored object when it is read back).
pub(crate) fn prepare_for_create(
    alloc: &Allocation<'_>,
    rt: &ResourceType,
    obj: &mut Value,
    user: Option<&UserInfo>,
) -> Result<(), ApiError> {
    if !built_in(rt) {
        return Ok(());
    }
    let key = (rt.group.as_str(), rt.plural.as_str());
    if let Some(zero) = lookup(&CREATE_STATUS_BY_TYPE, CREATE_STATUS, rt) {
        obj["status"] = zero();
    }
    match key {
        ("", "pods") => pod::prepare_for_create(obj),
        ("batch", "jobs") => workloads::generate_job_selector(obj),
        ("", "services") => service::allocate(obj, None, &alloc.used)?,
        ("certificates.k8s.io", "certificatesigningrequests") => others::requester(obj, user),
        ("", "persistentvolumes") => {
            obj["status"]["lastPhaseTransitionTime"] = json!(crate::api::meta::now());
        }
        _ => {}
    }
    apply(rt, obj);
    Ok(())
}

/// The strategy's `PrepareForUpdate` of a built-in: what an update may not drop (a Service
/// keeps its allocated cluster IPs and node ports; a type change allocates or releases them).
pub(crate) fn prepare_for_update(
    alloc: &Allocation<'_>,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
) -> Result<(), ApiError> {
    if is_service(rt) {
        service::allocate(new, Some(old), &alloc.used)?;
    }
    Ok(())
}

fn is_service(rt: &ResourceType) -> bool {
    built_in(rt) && rt.group.is_empty() && rt.plural == "services"
}

/// What a write holds while it is prepared and committed: for a Service, the Apiserver's
/// allocation lock (Service writes are serialized, so two creates never take one address)
/// and the addresses the other Services hold, read before the store's commit.
pub(crate) struct Allocation<'a> {
    _lock: Option<parking_lot::MutexGuard<'a, ()>>,
    used: service::Used,
}

impl<'a> Allocation<'a> {
    /// Begins a write of the object `okey` at `rt`.
    pub(crate) fn begin(api: &'a Apiserver, rt: &ResourceType, okey: &ObjKey) -> Self {
        if !is_service(rt) {
            return Allocation {
                _lock: None,
                used: service::Used::default(),
            };
        }
        let lock = api.allocations.lock();
        Allocation {
            _lock: Some(lock),
            used: service::Used::read(&api.store, okey),
        }
    }
}

/// Sets `o[key]` to `v` when it is missing or `null` (a Go pointer or slice left nil).
pub(crate) fn or_set(o: &mut Value, key: &str, v: Value) {
    if let Some(m) = o.as_object_mut()
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.to_string(), v);
    }
}

/// Sets `o[key]` to `v` when it is missing, `null` or `""` (a Go string left empty).
pub(crate) fn or_set_str(o: &mut Value, key: &str, v: &str) {
    if let Some(m) = o.as_object_mut()
        && m.get(key)
            .is_none_or(|x| x.is_null() || x.as_str() == Some(""))
    {
        m.insert(key.to_string(), json!(v));
    }
}

/// The object at `o[key]`, created empty when missing or `null` (a Go struct value, or a
/// pointer the defaulter allocates). `None` when `o` is not an object or `o[key]` is not one.
pub(crate) fn object<'a>(o: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let m = o.as_object_mut()?;
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.is_object().then_some(slot)
}

/// Each element of the array at `o[key]` (nothing when absent or not an array).
pub(crate) fn each<'a>(o: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    o.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
}

/// The object at `o[key]` when present (never created).
pub(crate) fn present<'a>(o: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    o.get_mut(key).filter(|v| v.is_object())
}

/// The array at `o[key]`, created empty when missing or `null`; `None` when it is not one.
pub(crate) fn object_array<'a>(o: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    let m = o.as_object_mut()?;
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}
