//! The Memcached controller on kube-runtime: the same behaviour as the `cargo ctrl create api
//! --image` reconciler (a Deployment of the image sized by `spec.size`, `Available` from its
//! available replicas, a finalizer that records an Event and sets `Degraded`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::api::{CONDITION_AVAILABLE, Memcached};

/// The finalizer kept on every Memcached.
pub const FINALIZER: &str = "cache.example.com/finalizer";
/// The image the Deployment runs when `MEMCACHED_IMAGE` is unset.
pub const DEFAULT_IMAGE: &str = "memcached:1.6";

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    /// The finalizer helper failed.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

/// What every reconcile shares.
pub struct Ctx {
    client: Client,
    recorder: Recorder,
}

/// Runs the controller until a signal.
pub async fn run(client: Client) {
    let memcacheds = Api::<Memcached>::all(client.clone());
    let deployments = Api::<Deployment>::all(client.clone());
    let reporter = Reporter { controller: "memcached".into(), instance: None };
    let ctx = Arc::new(Ctx { recorder: Recorder::new(client.clone(), reporter), client });
    Controller::new(memcacheds, watcher::Config::default())
        .owns(deployments, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::warn!(error = %e, "reconcile failed");
            }
        })
        .await;
}

fn error_policy(_obj: Arc<Memcached>, _err: &Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(obj: Arc<Memcached>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = obj.namespace().unwrap_or_default();
    let api = Api::<Memcached>::namespaced(ctx.client.clone(), &ns);
    finalizer(&api, FINALIZER, obj, |event| async {
        match event {
            Finalizer::Apply(obj) => apply(&obj, &ctx).await,
            Finalizer::Cleanup(obj) => cleanup(&obj, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

async fn apply(obj: &Memcached, ctx: &Ctx) -> Result<Action, Error> {
    let ns = obj.namespace().unwrap_or_default();
    let api = Api::<Deployment>::namespaced(ctx.client.clone(), &ns);
    let size = obj.spec.size.unwrap_or(1);
    let deployment = match api.get_opt(&obj.name_any()).await? {
        None => api.create(&PostParams::default(), &desired_deployment(obj)).await?,
        Some(d) if d.spec.as_ref().and_then(|s| s.replicas) != Some(size) => {
            let patch = Patch::Merge(json!({ "spec": { "replicas": size } }));
            api.patch(&obj.name_any(), &PatchParams::default(), &patch).await?
        }
        Some(d) => d,
    };
    let ready = deployment.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
    let (status, reason) = if ready >= size { ("True", "Reconciled") } else { ("False", "Progressing") };
    let message = format!("{ready}/{size} replicas available");
    set_condition(obj, ctx, condition(obj, CONDITION_AVAILABLE, status, reason, &message)).await?;
    Ok(Action::await_change())
}

async fn cleanup(obj: &Memcached, ctx: &Ctx) -> Result<Action, Error> {
    let degraded = condition(obj, "Degraded", "Unknown", "Finalizing", "performing the finalizer operations");
    set_condition(obj, ctx, degraded).await?;
    let event = Event {
        type_: EventType::Warning,
        reason: "Deleting".into(),
        note: Some(format!("Memcached {} is being deleted", obj.name_any())),
        action: "Finalize".into(),
        secondary: None,
    };
    ctx.recorder.publish(&event, &obj.object_ref(&())).await?;
    Ok(Action::await_change())
}

async fn set_condition(obj: &Memcached, ctx: &Ctx, new: Condition) -> Result<(), Error> {
    let mut status = obj.status.clone().unwrap_or_default();
    match status.conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(c) if c.status == new.status && c.reason == new.reason && c.message == new.message => {
            return Ok(());
        }
        Some(c) => *c = new,
        None => status.conditions.push(new),
    }
    let api = Api::<Memcached>::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    let patch = Patch::Merge(json!({ "status": status }));
    api.patch_status(&obj.name_any(), &PatchParams::default(), &patch).await?;
    Ok(())
}

fn condition(obj: &Memcached, type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: obj.meta().generation,
        last_transition_time: Time(Timestamp::now()),
    }
}

/// The Deployment of `obj`, controller-owned by it.
pub fn desired_deployment(obj: &Memcached) -> Deployment {
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "memcached".to_string()),
        ("app.kubernetes.io/instance".to_string(), obj.name_any()),
    ]);
    let image = std::env::var("MEMCACHED_IMAGE").unwrap_or_else(|_| DEFAULT_IMAGE.into());
    let container = Container {
        name: "memcached".into(),
        image: Some(image),
        ports: Some(vec![ContainerPort {
            container_port: obj.spec.container_port.unwrap_or(11211),
            ..Default::default()
        }]),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), add: None }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let spec = PodSpec {
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }),
            ..Default::default()
        }),
        containers: vec![container],
        ..Default::default()
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(obj.name_any()),
            namespace: obj.namespace(),
            owner_references: obj.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: obj.spec.size,
            selector: LabelSelector { match_labels: Some(labels.clone()), match_expressions: None },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..Default::default() }),
                spec: Some(spec),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}
