//! The CronJob operator, laid out as `cargo ctrl` lays out a generated project's
//! `src/lib.rs`: the API ([`api`]), its schedule arithmetic ([`schedule`]), the
//! controller ([`controller`]), the webhooks ([`webhook`]), the manager that runs them
//! ([`manager`]) and the samples the local demo creates ([`create_samples`]). The
//! example's `main` (`examples/cronjob.rs`) and its tests (`tests/cronjob.rs`) both use it.

pub mod api;
pub mod controller;
pub mod schedule;
pub mod webhook;

use std::collections::BTreeMap;

use ctrl::manager::{BoxError, Manager, Options};
use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};

use api::{ConcurrencyPolicy, CronJob, CronJobSpec};

/// The leader-election Lease, as kubebuilder derives it from the project's domain.
pub const LEASE_NAME: &str = "cronjob.tutorial.kubebuilder.io";

/// The CRDs of the operator's APIs.
pub const CRDS: &[fn() -> CustomResourceDefinition] = &[CronJob::crd];

/// The operator's manager on `client` with `opts`: the CronJob controller and, if
/// `with_webhooks`, its webhooks (kubebuilder's `ENABLE_WEBHOOKS`).
pub fn manager(
    client: kube::Client,
    opts: Options,
    with_webhooks: bool,
) -> Result<Manager, BoxError> {
    // Reads see the controller's own writes (docs/cache-and-client.md): a reconcile that
    // follows a Job's creation lists it, so a time is not run twice.
    let mut opts = opts;
    opts.client.cache.read_your_writes_consistency_enabled = true;
    let mgr = Manager::new(client, opts)?;
    controller::setup(&mgr)?;
    if with_webhooks {
        webhook::setup(&mgr)?;
        mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker())?;
    }
    Ok(mgr)
}

/// A CronJob named `name` in `default` running `schedule`, whose Job runs busybox to
/// completion (the tutorial's `config/samples/batch_v1_cronjob.yaml`).
pub fn cron_job(name: &str, schedule: &str) -> CronJob {
    let container = Container {
        name: "hello".into(),
        image: Some("busybox".into()),
        args: Some(
            [
                "/bin/sh",
                "-c",
                "date; echo Hello from the Kubernetes cluster",
            ]
            .map(String::from)
            .into(),
        ),
        ..Default::default()
    };
    let template = PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some("OnFailure".into()),
            ..Default::default()
        }),
    };
    let spec = CronJobSpec {
        schedule: schedule.into(),
        job_template: JobTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".into(), name.into())])),
                ..Default::default()
            }),
            spec: Some(JobSpec {
                template,
                ..Default::default()
            }),
        },
        ..Default::default()
    };
    let mut obj = CronJob::new(name, spec);
    obj.metadata.namespace = Some("default".into());
    obj
}

/// The sample of `config/samples/`: every minute, a deadline of 60 s, `Allow`.
pub fn sample() -> CronJob {
    let mut obj = cron_job("cronjob-sample", "*/1 * * * *");
    obj.spec.starting_deadline_seconds = Some(60);
    obj.spec.concurrency_policy = Some(ConcurrencyPolicy::Allow);
    obj
}

/// The local demo: the sample, and one every 2 seconds (a seconds field) so that a run
/// of a few seconds shows Jobs made on schedule, run by the simulated kubelet, and the
/// oldest pruned past the history limit the webhook defaulted.
pub async fn create_samples(client: kube::Client) -> Result<(), kube::Error> {
    let api: Api<CronJob> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    api.create(&pp, &sample()).await?;
    api.create(&pp, &cron_job("every-2s", "*/2 * * * * *"))
        .await?;
    Ok(())
}
