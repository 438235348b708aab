//! The AppService controller, as the Operator SDK scaffolds it and the walkthrough
//! reads it: watch the primary kind (`for_::<AppService>()`) and the Pods it creates
//! (`owns::<Pod>()`: a Pod event wakes its controller owner, and only Pods with a
//! controller reference to an AppService do); reconcile by reading the AppService
//! from the cache (not found: it was deleted, nothing to do), keeping exactly
//! `spec.size` Pods named `<name>-pod-<i>`, and writing `status.nodes` and the
//! `Available` condition ([`ctrl::conditions`]) through the status subresource.
//!
//! As a careful operator would, it server-side applies each missing Pod as a typed apply
//! configuration ([`ctrl::client::apply`]: `PodApply` sets only what the operator means —
//! name, labels, owner, one container — so it owns only those fields and a repeat apply is
//! a no-op, where a create races with the cache and fails with AlreadyExists), and its
//! manager's client reads its own writes (`setup`), so the next reconcile's list sees the
//! Pods it applied even when the watch lags.
//!
//! Deletion: the Pods carry a controller owner reference, so the garbage collector
//! removes them with their AppService; the finalizer only lets the operator see the
//! deletion (it records a `Deleting` Event) before the object goes. Each reconcile
//! ends with `requeue_after(resync_period)`, the walkthrough's way to follow state
//! that no watch reports.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ctrl::CancellationToken;
use ctrl::ControllerBuilder;
use ctrl::async_trait;
use ctrl::client::apply::core::v1::{ContainerApply, PodApply, PodSpecApply};
use ctrl::client::apply::meta::v1::{ObjectMetaApply, OwnerReferenceApply};
use ctrl::conditions::{self, CONDITION_FALSE, CONDITION_TRUE};
use ctrl::controllerutil;
use ctrl::manager::{BoxError, Manager};
use ctrl::prelude::{Client, ListOptions, ObjectWriter, Reader, ignore_not_found};
use ctrl::rbac;
use ctrl::reconcile::{self, Action, Reconciler, Request};
use ctrl::recorder::{EventType, Recorder};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::crd::{APP_LABEL, AppService, AppServiceStatus, CONDITION_AVAILABLE, FINALIZER};

/// How the controller is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// The controller's name (metrics, logs, the Events' reporting controller).
    pub name: String,
    /// Every AppService is reconciled again this long after its last reconcile.
    pub resync_period: Duration,
    /// Labels of an AppService that its Pods carry too (when it has them). The sharded
    /// operator passes its ring's shard label, so that a Pod is in its shard's cache
    /// from its creation (`super::sharding`).
    pub inherited_labels: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "appservice".into(),
            resync_period: Duration::from_secs(30),
            inherited_labels: Vec::new(),
        }
    }
}

/// Adds the AppService controller to `mgr` (Go's
/// `ctrl.NewControllerManagedBy(mgr).For(&AppService{}).Owns(&corev1.Pod{}).Complete(r)`).
pub fn setup(mgr: &Manager, cfg: &Config) -> Result<(), BoxError> {
    builder(mgr, cfg).complete(reconciler(mgr, cfg))?;
    Ok(())
}

/// The controller's builder, before `complete`: the watches, the permissions the
/// reconciler needs and the name. `setup` completes it as it is; the sharded operator
/// makes it a shard first.
pub fn builder(mgr: &Manager, cfg: &Config) -> ControllerBuilder<Request, AppService> {
    ControllerBuilder::new(mgr)
        .for_::<AppService>()
        .owns::<Pod>()
        // +kubebuilder:rbac markers: Pods are applied (a patch that may create) and
        // deleted, the finalizer added and removed by update, the status written by a
        // merge patch.
        .permissions([
            rbac::rule()
                .groups([""])
                .resources(["pods"])
                .verbs(["create", "patch", "delete"]),
            rbac::rule()
                .groups([AppService::group(&())])
                .resources(["appservices"])
                .verbs(["update"]),
            rbac::rule()
                .groups([AppService::group(&())])
                .resources(["appservices/status"])
                .verbs(["patch"]),
        ])
        .named(cfg.name.clone())
}

/// The reconciler, with `mgr`'s client and an Event recorder named after the controller.
pub fn reconciler(mgr: &Manager, cfg: &Config) -> AppServiceReconciler {
    AppServiceReconciler {
        client: mgr.client(),
        recorder: mgr.event_recorder(cfg.name.clone()),
        resync_period: cfg.resync_period,
        inherited_labels: cfg.inherited_labels.clone(),
    }
}

/// The field manager of the Pods the controller applies.
pub const FIELD_MANAGER: &str = "appservice";

/// The name of an AppService's `i`th Pod.
pub fn pod_name(app: &str, i: usize) -> String {
    format!("{app}-pod-{i}")
}

/// Keeps an AppService's Pods and status in line with its spec.
pub struct AppServiceReconciler {
    client: Client,
    recorder: Recorder,
    resync_period: Duration,
    inherited_labels: Vec<String>,
}

#[async_trait]
impl Reconciler for AppServiceReconciler {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: Request,
    ) -> Result<Action, reconcile::Error> {
        let got = self
            .client
            .get::<AppService>(&req.namespace, &req.name)
            .await;
        let Some(app) = ignore_not_found(got)? else {
            tracing::debug!(target: "appservice::reconcile", "not found, deleted: nothing to do");
            return Ok(Action::done());
        };
        if app.meta().deletion_timestamp.is_some() {
            return self.finalize(&app).await;
        }
        let app = self.ensure_finalizer(&app).await?;
        let seen = self.sync_pods(&app).await?;
        self.write_status(&app, seen).await?;
        Ok(Action::requeue_after(self.resync_period))
    }
}

impl AppServiceReconciler {
    /// Go's `AddFinalizer` + `Update`: the update carries the resourceVersion, so a
    /// stale cached copy gets a conflict (and a retry), never a lost write.
    async fn ensure_finalizer(&self, app: &AppService) -> Result<AppService, reconcile::Error> {
        let mut with = app.clone();
        if controllerutil::add_finalizer(&mut with, FINALIZER) {
            with = self.client.update(&with).await?;
            tracing::info!(target: "appservice::finalizer", "added finalizer {FINALIZER}");
        }
        Ok(with)
    }

    /// Creates the missing Pods and deletes the extra ones; returns the names of the
    /// Pods that are now wanted and not terminating, and how many of them are ready.
    async fn sync_pods(&self, app: &AppService) -> Result<Observed, reconcile::Error> {
        let name = app.name_any();
        let size = usize::try_from(app.spec.size).unwrap_or(0);
        let wanted: Vec<String> = (0..size).map(|i| pod_name(&name, i)).collect();
        let owned = self.owned_pods(app).await?;
        let mut seen = Observed::default();
        for pod in &owned {
            if pod.metadata.deletion_timestamp.is_some() {
                continue; // going; its deletion event brings us back
            }
            if wanted.contains(&pod.name_any()) {
                seen.add(pod.name_any(), pod_ready(pod));
                continue;
            }
            let gone = self
                .client
                .delete(pod.as_ref(), &DeleteParams::default())
                .await;
            ignore_not_found(gone)?;
            tracing::info!(target: "appservice::pods", "deleted Pod {} (size {size})", pod.name_any());
        }
        for pod_name in wanted
            .iter()
            .filter(|w| !owned.iter().any(|p| p.name_any() == **w))
        {
            let pod = desired_pod(app, pod_name, &self.inherited_labels)?;
            self.client
                .apply_config(&pod, Some(FIELD_MANAGER), true)
                .await?;
            tracing::info!(target: "appservice::pods", "created Pod {pod_name} by server-side apply (image {})", app.spec.image);
            seen.add(pod_name.clone(), false);
        }
        Ok(seen)
    }

    /// The Pods in the AppService's namespace with its label and a controller
    /// reference to it, from the cache.
    async fn owned_pods(&self, app: &AppService) -> Result<Vec<Arc<Pod>>, reconcile::Error> {
        let opts = ListOptions::new()
            .in_namespace(app.namespace().unwrap_or_default())
            .matching_label_map([(APP_LABEL, app.name_any())]);
        let uid = app.uid();
        let pods = self.client.list::<Pod>(&opts).await?;
        Ok(pods
            .into_iter()
            .filter(|p| {
                p.owner_references()
                    .iter()
                    .any(|r| r.controller == Some(true) && Some(&r.uid) == uid.as_ref())
            })
            .collect())
    }

    /// Writes `status.nodes` and the `Available` condition, if either changed.
    async fn write_status(&self, app: &AppService, seen: Observed) -> Result<(), reconcile::Error> {
        let size = usize::try_from(app.spec.size).unwrap_or(0);
        let Observed { mut nodes, ready } = seen;
        nodes.sort();
        let current = app.status.clone().unwrap_or_default();
        let mut status = AppServiceStatus {
            nodes,
            conditions: current.conditions.clone(),
        };
        let available = available_condition(app, ready, size, status.nodes.len());
        let changed = conditions::set_status_condition(&mut status.conditions, available);
        if !changed && current.nodes == status.nodes {
            return Ok(());
        }
        let patch = Patch::Merge(json!({ "status": status }));
        self.client
            .status()
            .patch(app, &patch, PatchParams::default())
            .await?;
        tracing::info!(target: "appservice::status", "{ready}/{size} Pods ready, nodes {:?}", status.nodes);
        Ok(())
    }

    /// The AppService is being deleted: record it, then let the deletion finish.
    /// Its Pods go by garbage collection (their controller owner reference).
    async fn finalize(&self, app: &AppService) -> Result<Action, reconcile::Error> {
        if !controllerutil::contains_finalizer(app, FINALIZER) {
            return Ok(Action::done());
        }
        self.recorder.event(
            app,
            EventType::Normal,
            "Deleting",
            "Finalize",
            format!(
                "deleting {}; its Pods go by garbage collection",
                app.name_any()
            ),
        );
        let mut released = app.clone();
        controllerutil::remove_finalizer(&mut released, FINALIZER);
        self.client.update(&released).await?;
        tracing::info!(target: "appservice::finalizer", "Deleting Event recorded, finalizer removed: the object goes, then its Pods");
        Ok(Action::done())
    }
}

/// The labels of an AppService's Pods: [`APP_LABEL`] (its name), and those of
/// `inherited` that the AppService has.
fn pod_labels(app: &AppService, inherited: &[String]) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = [(APP_LABEL.to_string(), app.name_any())].into();
    for key in inherited {
        if let Some(value) = app.labels().get(key) {
            labels.insert(key.clone(), value.clone());
        }
    }
    labels
}

/// The Pod `name` of `app` as an apply configuration: its image, sleeping, labelled
/// ([`pod_labels`]) and controller-owned by it (the walkthrough's `newPodForCR` with
/// `SetControllerReference`), and nothing else.
fn desired_pod(
    app: &AppService,
    name: &str,
    inherited: &[String],
) -> Result<PodApply, reconcile::Error> {
    let namespace = app.namespace().unwrap_or_default();
    let mut owned = Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    controllerutil::set_controller_reference(app, &mut owned).map_err(reconcile::Error::new)?;
    // With the `otel` feature: stamp the Pod with this reconcile's trace context.
    #[cfg(feature = "otel")]
    ctrl::otel::inject(&mut owned.metadata);
    let annotations = owned.metadata.annotations.take().unwrap_or_default();
    let owners = owned.metadata.owner_references.unwrap_or_default();
    let owners = owners.into_iter().map(|r| {
        let apply = OwnerReferenceApply::default()
            .api_version(r.api_version)
            .kind(r.kind)
            .name(r.name)
            .uid(r.uid);
        match (r.controller, r.block_owner_deletion) {
            (Some(c), Some(b)) => apply.controller(c).block_owner_deletion(b),
            _ => apply,
        }
    });
    let metadata = ObjectMetaApply::default()
        .name(name)
        .namespace(namespace.clone())
        .labels(pod_labels(app, inherited))
        .annotations(annotations)
        .owner_references(owners);
    let container = ContainerApply::default()
        .name("app")
        .image(app.spec.image.clone())
        .command(["sleep".to_string(), "3600".to_string()]);
    Ok(PodApply::new(name, namespace)
        .metadata(metadata)
        .spec(PodSpecApply::default().containers([container])))
}

/// What a reconcile saw of an AppService's Pods: the names of those it wants that
/// exist and are not terminating, and how many of them are ready.
#[derive(Debug, Default)]
struct Observed {
    nodes: Vec<String>,
    ready: usize,
}

impl Observed {
    fn add(&mut self, name: String, ready: bool) {
        self.nodes.push(name);
        self.ready += usize::from(ready);
    }
}

/// Whether a Pod's `Ready` condition is `True`.
fn pod_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// `Available`: all `size` Pods exist and are ready, for this generation.
fn available_condition(app: &AppService, ready: usize, size: usize, running: usize) -> Condition {
    let (status, reason) = if ready == size && running == size {
        (CONDITION_TRUE, "PodsReady")
    } else if running != size {
        (CONDITION_FALSE, "Scaling")
    } else {
        (CONDITION_FALSE, "PodsNotReady")
    };
    Condition {
        type_: CONDITION_AVAILABLE.into(),
        status: status.into(),
        reason: reason.into(),
        message: format!("{ready}/{size} Pods ready"),
        observed_generation: app.meta().generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH), // unset: now when it changes
    }
}
