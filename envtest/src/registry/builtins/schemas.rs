//! Schemas of the built-in types, generated once from `k8s_openapi`'s `schemars` impls (the
//! descriptions are upstream's field docs) with OpenAPI 3 settings: `$ref`s point into
//! `#/components/schemas/` and a `$ref` with a description becomes `allOf: [{$ref}]`, as the
//! real apiserver writes it. Two readers: `endpoints::openapi` picks the schemas of one
//! group-version (plus every schema they reference) for each document, and the sibling
//! `decode` type-checks a built-in request body against its kind's schema.

use std::collections::HashMap;
use std::sync::OnceLock;

use k8s_openapi::Resource;
use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates,
    coordination, core, discovery, events, networking, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// (group, version, kind) of a resource.
pub(crate) type Gvk = (String, String, String);

/// Every generated schema, and the schema name of each built-in kind.
#[derive(Debug)]
pub(crate) struct Builtins {
    /// Schema name → schema, for the built-in kinds and everything they reference.
    pub definitions: Map<String, Value>,
    /// The schema name of each built-in kind.
    pub roots: HashMap<Gvk, String>,
}

/// The schema name of `ObjectMeta`, which custom resources reference too.
pub(crate) fn object_meta_name() -> String {
    ObjectMeta::schema_name().into_owned()
}

struct Collector {
    generator: SchemaGenerator,
    roots: HashMap<Gvk, String>,
}

impl Collector {
    fn add<K: Resource + JsonSchema>(&mut self) -> &mut Self {
        self.generator.subschema_for::<K>();
        let gvk = (K::GROUP.into(), K::VERSION.into(), K::KIND.into());
        self.roots.insert(gvk, K::schema_name().into_owned());
        self
    }
}

/// The built-in schemas, generated on first use.
pub(crate) fn builtins() -> &'static Builtins {
    static BUILTINS: OnceLock<Builtins> = OnceLock::new();
    BUILTINS.get_or_init(generate)
}

fn generate() -> Builtins {
    use core::v1 as c;
    let mut col = Collector {
        generator: SchemaGenerator::new(SchemaSettings::openapi3()),
        roots: HashMap::new(),
    };
    col.generator.subschema_for::<ObjectMeta>();
    col.add::<c::Namespace>()
        .add::<c::ConfigMap>()
        .add::<c::Secret>()
        .add::<c::ServiceAccount>()
        .add::<c::Service>()
        .add::<c::Pod>()
        .add::<c::Event>()
        .add::<c::Endpoints>()
        .add::<c::Node>()
        .add::<c::PersistentVolumeClaim>()
        .add::<c::PersistentVolume>()
        .add::<c::ReplicationController>()
        .add::<c::LimitRange>()
        .add::<c::ResourceQuota>()
        .add::<c::PodTemplate>()
        .add::<apps::v1::Deployment>()
        .add::<apps::v1::ReplicaSet>()
        .add::<apps::v1::StatefulSet>()
        .add::<apps::v1::DaemonSet>()
        .add::<apps::v1::ControllerRevision>()
        .add::<batch::v1::Job>()
        .add::<batch::v1::CronJob>()
        .add::<coordination::v1::Lease>()
        .add::<events::v1::Event>()
        .add::<CustomResourceDefinition>()
        .add::<rbac::v1::Role>()
        .add::<rbac::v1::RoleBinding>()
        .add::<rbac::v1::ClusterRole>()
        .add::<rbac::v1::ClusterRoleBinding>()
        .add::<admissionregistration::v1::ValidatingWebhookConfiguration>()
        .add::<admissionregistration::v1::MutatingWebhookConfiguration>()
        .add::<networking::v1::Ingress>()
        .add::<networking::v1::IngressClass>()
        .add::<networking::v1::NetworkPolicy>()
        .add::<policy::v1::PodDisruptionBudget>()
        .add::<autoscaling::v2::HorizontalPodAutoscaler>()
        .add::<autoscaling::v1::HorizontalPodAutoscaler>()
        .add::<discovery::v1::EndpointSlice>()
        .add::<storage::v1::StorageClass>()
        .add::<scheduling::v1::PriorityClass>()
        .add::<authentication::v1::TokenReview>()
        .add::<authorization::v1::SubjectAccessReview>()
        .add::<authorization::v1::SelfSubjectAccessReview>()
        .add::<authorization::v1::SelfSubjectRulesReview>()
        .add::<authorization::v1::LocalSubjectAccessReview>()
        .add::<authentication::v1::SelfSubjectReview>()
        .add::<c::ComponentStatus>()
        .add::<admissionregistration::v1::ValidatingAdmissionPolicy>()
        .add::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>()
        .add::<certificates::v1::CertificateSigningRequest>()
        .add::<APIService>();
    let Collector {
        mut generator,
        roots,
    } = col;
    let mut definitions = generator.take_definitions(true);
    for ((group, version, kind), name) in &roots {
        if let Some(Value::Object(s)) = definitions.get_mut(name) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": group, "version": version, "kind": kind}]),
            );
        }
    }
    tracing::debug!(
        schemas = definitions.len(),
        "generated built-in OpenAPI schemas"
    );
    Builtins { definitions, roots }
}
