//! The built-in resource types served from the start (kube-apiserver's REST storage providers,
//! `k8s.io/kubernetes/pkg/controlplane/instance.go`). Group, version, kind, plural and scope come
//! from `k8s_openapi`; subresources, short names, categories, generation tracking and
//! field-selector fields are listed by hand. No controller runs behind them. A body of one is
//! type-checked as upstream's decode into its Go type would (`decode`), against the kind's
//! generated schema (`schemas`).

use std::any::TypeId;

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates,
    coordination, core, discovery, events, networking, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::{NamespaceResourceScope, Resource};

use serde_json::Value;

use crate::registry::{ResourceType, ScaleSpec, View};

/// Status subresource.
const S: u8 = 1;
/// Scale subresource (.spec.replicas).
const SC: u8 = 2;
/// Tracks metadata.generation.
const G: u8 = 4;
/// Create-only virtual resource.
const V: u8 = 8;

/// The resource type of `K` (its constants and its schema's name, which [`decode::check`]
/// type-checks bodies against); the rest is [`resource_type`], which is not generic, so that it
/// is compiled once instead of once per built-in type.
fn t<K: Resource + JsonSchema + 'static>(
    flags: u8,
    short: &[&str],
    fields: &[&str],
) -> ResourceType {
    let names = Names {
        group: K::GROUP,
        version: K::VERSION,
        kind: K::KIND,
        plural: K::URL_PATH_SEGMENT,
        api_version: K::API_VERSION,
        namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
    };
    resource_type(names, flags, short, fields, K::schema_name().into_owned())
}

/// What [`t`] reads from a `k8s_openapi` type.
struct Names {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    api_version: &'static str,
    namespaced: bool,
}

fn resource_type(
    n: Names,
    flags: u8,
    short: &[&str],
    fields: &[&str],
    schema_name: String,
) -> ResourceType {
    ResourceType {
        group: n.group.to_string(),
        version: n.version.to_string(),
        kind: n.kind.to_string(),
        list_kind: format!("{}List", n.kind),
        plural: n.plural.to_string(),
        singular: n.kind.to_ascii_lowercase(),
        namespaced: n.namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        status: flags & S != 0,
        scale: (flags & SC != 0).then(|| ScaleSpec {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".spec.selector".into()),
        }),
        generation: flags & G != 0,
        crd: None,
        schema: None,
        rules: false,
        storage_version: n.api_version.to_string(),
        virtual_create: flags & V != 0,
        fields: fields.iter().map(|s| s.to_string()).collect(),
        decode: Some(schema_name),
        view: None,
    }
}

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// Every built-in type, in discovery order.
pub(crate) fn builtin_types() -> Vec<ResourceType> {
    use core::v1 as c;
    let mut v = vec![
        t::<c::Namespace>(S, &["ns"], &["status.phase"]),
        t::<c::ConfigMap>(0, &["cm"], &[]),
        t::<c::Secret>(0, &[], &["type"]),
        t::<c::ServiceAccount>(0, &["sa"], &[]),
        t::<c::Service>(S, &["svc"], &[]),
        t::<c::Pod>(S, &["po"], POD_FIELDS),
        t::<c::Event>(0, &["ev"], EVENT_FIELDS),
        t::<c::Endpoints>(0, &["ep"], &[]),
        t::<c::Node>(S, &["no"], &["spec.unschedulable"]),
        t::<c::PersistentVolumeClaim>(S, &["pvc"], &[]),
        t::<c::PersistentVolume>(S, &["pv"], &[]),
        t::<c::ReplicationController>(S | SC, &["rc"], &["status.replicas"]),
        t::<c::LimitRange>(0, &["limits"], &[]),
        t::<c::ResourceQuota>(S, &["quota"], &[]),
        t::<c::PodTemplate>(0, &[], &[]),
        t::<c::ComponentStatus>(0, &["cs"], &[]),
        t::<apps::v1::Deployment>(S | SC | G, &["deploy"], &[]),
        t::<apps::v1::ReplicaSet>(S | SC | G, &["rs"], &["status.replicas"]),
        t::<apps::v1::StatefulSet>(S | SC | G, &["sts"], &[]),
        t::<apps::v1::DaemonSet>(S | G, &["ds"], &[]),
        t::<apps::v1::ControllerRevision>(0, &[], &[]),
        t::<batch::v1::Job>(S | G, &[], &["status.successful"]),
        t::<batch::v1::CronJob>(S | G, &["cj"], &[]),
        t::<coordination::v1::Lease>(0, &[], &[]),
        t::<events::v1::Event>(0, &["ev"], &[]),
        t::<CustomResourceDefinition>(S | G, &["crd", "crds"], &[]),
        t::<rbac::v1::Role>(0, &[], &[]),
        t::<rbac::v1::RoleBinding>(0, &[], &[]),
        t::<rbac::v1::ClusterRole>(0, &[], &[]),
        t::<rbac::v1::ClusterRoleBinding>(0, &[], &[]),
        t::<admissionregistration::v1::ValidatingWebhookConfiguration>(G, &[], &[]),
        t::<admissionregistration::v1::MutatingWebhookConfiguration>(G, &[], &[]),
        t::<admissionregistration::v1::ValidatingAdmissionPolicy>(S | G, &[], &[]),
        t::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(G, &[], &[]),
        t::<networking::v1::Ingress>(S | G, &["ing"], &[]),
        t::<networking::v1::IngressClass>(0, &[], &[]),
        t::<networking::v1::NetworkPolicy>(G, &["netpol"], &[]),
        t::<policy::v1::PodDisruptionBudget>(S | G, &["pdb"], &[]),
        t::<autoscaling::v2::HorizontalPodAutoscaler>(S | G, &["hpa"], &[]),
        t::<autoscaling::v1::HorizontalPodAutoscaler>(S | G, &["hpa"], &[]),
        t::<discovery::v1::EndpointSlice>(0, &[], &[]),
        t::<storage::v1::StorageClass>(0, &["sc"], &[]),
        t::<scheduling::v1::PriorityClass>(0, &["pc"], &[]),
        t::<certificates::v1::CertificateSigningRequest>(S, &["csr"], &["spec.signerName"]),
        t::<APIService>(S, &[], &[]),
        t::<authentication::v1::TokenReview>(V, &[], &[]),
        t::<authorization::v1::SubjectAccessReview>(V, &[], &[]),
        t::<authorization::v1::SelfSubjectAccessReview>(V, &[], &[]),
        t::<authorization::v1::SelfSubjectRulesReview>(V, &[], &[]),
        t::<authorization::v1::LocalSubjectAccessReview>(V, &[], &[]),
        t::<authentication::v1::SelfSubjectReview>(V, &[], &[]),
    ];
    for rt in &mut v {
        complete(rt);
    }
    v
}

/// What the table does not say: the `all` category, the events.k8s.io view of core/v1 Events,
/// and the shared storage of both autoscaling versions.
fn complete(rt: &mut ResourceType) {
    if [
        "pods",
        "services",
        "replicationcontrollers",
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
        "jobs",
        "cronjobs",
        "horizontalpodautoscalers",
    ]
    .contains(&rt.plural.as_str())
    {
        rt.categories.push("all".into());
    }
    // events.k8s.io/v1 is a view of the core/v1 Events.
    if rt.group == "events.k8s.io" {
        rt.view = Some(View {
            store: ("", "events"),
            to_view: event_to_view,
            from_view: event_from_view,
        });
        rt.storage_version = "v1".into();
        rt.decode = Some(core::v1::Event::schema_name().into_owned());
    }
    // Both autoscaling versions share one collection, as upstream.
    if rt.plural == "horizontalpodautoscalers" {
        rt.storage_version = "autoscaling/v2".into();
    }
}

/// events.k8s.io/v1 field names and their core/v1 Event counterparts.
const EVENT_FIELDS_MAP: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedCount", "count"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedSource", "source"),
    ("reportingController", "reportingComponent"),
];

fn rename(v: &mut Value, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    if let Some(o) = v.as_object_mut() {
        for (from, to) in pairs {
            if let Some(x) = o.remove(from) {
                o.insert(to.to_string(), x);
            }
        }
    }
}

/// A stored core/v1 Event as an events.k8s.io/v1 Event.
fn event_to_view(v: &mut Value) {
    rename(v, EVENT_FIELDS_MAP.iter().map(|(e, c)| (*c, *e)));
    v["apiVersion"] = Value::from("events.k8s.io/v1");
    v["kind"] = Value::from("Event");
}

/// An events.k8s.io/v1 Event as a core/v1 Event.
fn event_from_view(v: &mut Value) {
    rename(v, EVENT_FIELDS_MAP.iter().copied());
    v["apiVersion"] = Value::from("v1");
    v["kind"] = Value::from("Event");
}

/// The built-in resources whose upstream store sets `ReturnDeletedObject`
/// (`pkg/registry/core/{pod,service,serviceaccount,namespace,persistentvolume,persistentvolumeclaim}/storage/storage.go`,
/// `pkg/registry/storage/storageclass/storage/storage.go`): a delete that removes the object
/// answers with the object instead of a `Status`.
const RETURN_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("storage.k8s.io", "storageclasses"),
];

/// Whether a delete of `rt` answers with the deleted object (see [`RETURN_DELETED_OBJECT`]).
pub(crate) fn returns_deleted_object(rt: &ResourceType) -> bool {
    RETURN_DELETED_OBJECT.iter().any(|(g, p)| rt.is(g, p))
}

/// Resources served read-only (`get`, `list`): `componentstatuses`, deprecated and computed
/// by upstream from its components' health (seeded here as a running cluster answers).
pub(crate) fn read_only(rt: &ResourceType) -> bool {
    rt.is("", "componentstatuses")
}

/// The `componentstatuses` a healthy cluster reports (`pkg/registry/core/componentstatus`).
pub(crate) fn component_statuses() -> Vec<Value> {
    ["scheduler", "controller-manager", "etcd-0"]
        .iter()
        .map(|name| {
            let message = if *name == "etcd-0" {
                r#"{"health":"true","reason":""}"#
            } else {
                "ok"
            };
            serde_json::json!({
                "apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": name},
                "conditions": [{"type": "Healthy", "status": "True", "message": message}],
            })
        })
        .collect()
}

pub(crate) mod decode;
mod rfc3339;
pub(crate) mod schemas;

#[cfg(test)]
mod protobuf_table;
