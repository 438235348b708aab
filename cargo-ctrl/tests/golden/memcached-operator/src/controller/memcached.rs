//! The `Memcached` controller, as kubebuilder's deploy-image plugin writes it: each
//! Memcached runs a Deployment of `memcached:1.6` (controller-owned, so it goes with its
//! Memcached), sized by `spec.size`; the Memcached's `Available` condition follows the
//! Deployment's available replicas; a finalizer lets the operator see a deletion (it
//! records an Event and sets `Degraded`) before the object goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use ctrl::CancellationToken;
use ctrl::ControllerBuilder;
use ctrl::async_trait;
use ctrl::conditions::{self, CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN};
use ctrl::controllerutil;
use ctrl::manager::{BoxError, Manager};
use ctrl::prelude::{Client, ObjectWriter, Reader, ignore_not_found};
use ctrl::rbac;
use ctrl::reconcile::{self, Action, Reconciler};
use ctrl::recorder::{EventType, Recorder};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::api::v1alpha1::memcached::{CONDITION_AVAILABLE, Memcached};

/// The finalizer kept on every Memcached.
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// The condition set while a Memcached is being deleted.
pub const CONDITION_DEGRADED: &str = "Degraded";
/// The environment variable naming the image the Deployment runs (kubebuilder's
/// deploy-image plugin: the manager's Deployment sets it, `src/lib.rs`'s `env`).
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";
/// The image the Deployment runs when [`IMAGE_ENV`] is unset.
pub const DEFAULT_IMAGE: &str = "memcached:1.6";
/// The container port of the image.
pub const DEFAULT_PORT: i32 = 11211;

/// Adds the Memcached controller to `mgr` (Go's
/// `ctrl.NewControllerManagedBy(mgr).For(&Memcached{}).Owns(&appsv1.Deployment{}).Complete(r)`).
pub fn setup(mgr: &Manager) -> Result<(), BoxError> {
    let plural = Memcached::plural(&());
    ControllerBuilder::new(mgr)
        .for_::<Memcached>()
        .owns::<Deployment>()
        // +kubebuilder:rbac markers: the Deployments are created and updated, the
        // finalizer added and removed by update, the status written by a merge patch.
        .permissions([
            rbac::rule()
                .groups(["apps"])
                .resources(["deployments"])
                .verbs(["create", "update", "patch"]),
            rbac::rule()
                .groups([Memcached::group(&())])
                .resources([plural.to_string()])
                .verbs(["update"]),
            rbac::rule()
                .groups([Memcached::group(&())])
                .resources([format!("{plural}/status")])
                .verbs(["patch"]),
        ])
        .named("memcached")
        .complete(MemcachedReconciler {
            client: mgr.client(),
            recorder: mgr.event_recorder("memcached"),
        })?;
    Ok(())
}

/// Reconciles Memcacheds.
pub struct MemcachedReconciler {
    client: Client,
    recorder: Recorder,
}

#[async_trait]
impl Reconciler<Arc<Memcached>> for MemcachedReconciler {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        obj: Arc<Memcached>,
    ) -> Result<Action, reconcile::Error> {
        if obj.meta().deletion_timestamp.is_some() {
            return self.finalize(&obj).await;
        }
        let mut obj = obj.as_ref().clone();
        if controllerutil::add_finalizer(&mut obj, FINALIZER) {
            obj = self.client.update(&obj).await?;
        }
        let deployment = self.ensure_deployment(&obj).await?;
        self.write_status(&obj, &deployment).await?;
        Ok(Action::done())
    }
}

impl MemcachedReconciler {
    /// The Memcached's Deployment, created if missing and resized if its replicas differ
    /// from `spec.size`.
    async fn ensure_deployment(&self, obj: &Memcached) -> Result<Deployment, reconcile::Error> {
        let ns = obj.namespace().unwrap_or_default();
        let existing = ignore_not_found(self.client.get::<Deployment>(&ns, &obj.name_any()).await)?;
        let size = size(obj);
        let Some(current) = existing else {
            let created = self.client.create(&desired_deployment(obj)?).await?;
            tracing::info!("created Deployment of {size} replicas");
            return Ok(created);
        };
        let replicas = current.spec.as_ref().and_then(|s| s.replicas);
        if replicas == Some(size) {
            return Ok(current.as_ref().clone());
        }
        let patch = Patch::Merge(json!({ "spec": { "replicas": size } }));
        let resized = self
            .client
            .patch(current.as_ref(), &patch, PatchParams::default())
            .await?;
        tracing::info!("resized the Deployment to {size} replicas");
        Ok(resized)
    }

    /// Sets `Available` from the Deployment's available replicas, if it changed.
    async fn write_status(&self, obj: &Memcached, deployment: &Deployment) -> Result<(), reconcile::Error> {
        let ready = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        let size = size(obj);
        let (status, reason) = match ready >= size {
            true => (CONDITION_TRUE, "Reconciled"),
            false => (CONDITION_FALSE, "Progressing"),
        };
        let message = format!("{ready}/{size} replicas available");
        let condition = condition(obj, CONDITION_AVAILABLE, status, reason, &message);
        self.set_condition(obj, condition).await
    }

    /// Writes `condition` into the Memcached's status, if it changed.
    async fn set_condition(&self, obj: &Memcached, condition: Condition) -> Result<(), reconcile::Error> {
        let mut status = obj.status.clone().unwrap_or_default();
        if !conditions::set_status_condition(&mut status.conditions, condition) {
            return Ok(());
        }
        let patch = Patch::Merge(json!({ "status": status }));
        self.client
            .status()
            .patch(obj, &patch, PatchParams::default())
            .await?;
        Ok(())
    }

    /// The Memcached is being deleted: say so (`Degraded`, an Event), then release it.
    /// Its Deployment goes by garbage collection (its controller owner reference).
    async fn finalize(&self, obj: &Memcached) -> Result<Action, reconcile::Error> {
        if !controllerutil::contains_finalizer(obj, FINALIZER) {
            return Ok(Action::done());
        }
        let degraded = condition(obj, CONDITION_DEGRADED, CONDITION_UNKNOWN, "Finalizing", "performing the finalizer operations");
        self.set_condition(obj, degraded).await?;
        self.recorder.event(
            obj,
            EventType::Warning,
            "Deleting",
            "Finalize",
            format!("{} {} is being deleted", Memcached::kind(&()), obj.name_any()),
        );
        // Re-read: the status write changed the resourceVersion.
        let ns = obj.namespace().unwrap_or_default();
        let api = kube::Api::<Memcached>::namespaced(self.client.kube_client().clone(), &ns);
        let mut released = api.get(&obj.name_any()).await?;
        if controllerutil::remove_finalizer(&mut released, FINALIZER) {
            self.client.update(&released).await?;
        }
        Ok(Action::done())
    }
}

/// `spec.size`, 1 when unset.
fn size(obj: &Memcached) -> i32 {
    obj.spec.size.unwrap_or(1)
}

/// A condition of `obj`'s generation.
fn condition(obj: &Memcached, type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: obj.meta().generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH), // unset: now when it changes
    }
}

/// The Deployment of `obj`: `spec.size` replicas of the image, under the restricted Pod
/// Security Standard, controller-owned by `obj`.
fn desired_deployment(obj: &Memcached) -> Result<Deployment, reconcile::Error> {
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "memcached".to_string()),
        ("app.kubernetes.io/instance".to_string(), obj.name_any()),
        ("app.kubernetes.io/managed-by".to_string(), "memcached-operator".to_string()),
    ]);
    let image = std::env::var(IMAGE_ENV).unwrap_or_else(|_| DEFAULT_IMAGE.into());
    let container = Container {
        name: "memcached".into(),
        image: Some(image),
        image_pull_policy: Some("IfNotPresent".into()),
        ports: Some(vec![ContainerPort {
            container_port: obj.spec.container_port.unwrap_or(DEFAULT_PORT),
            name: Some("memcached".into()),
            ..Default::default()
        }]),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(1001),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(obj.name_any()),
            namespace: obj.namespace(),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(size(obj)),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".into(),
                            localhost_profile: None,
                        }),
                        ..Default::default()
                    }),
                    containers: vec![container],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    controllerutil::set_controller_reference(obj, &mut deployment).map_err(reconcile::Error::new)?;
    Ok(deployment)
}
