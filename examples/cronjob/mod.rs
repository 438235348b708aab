//! The CronJob operator. Each file is one file of the `cargo ctrl` project that
//! docs/tutorial.md builds: this one is its `src/lib.rs` (the manager, the samples),
//! [`api`] its `src/api/v1/cronjob.rs`, [`controller`] `src/controller/cronjob.rs`,
//! [`webhook`] `src/webhook/cronjob.rs`, [`schedule`] `src/schedule.rs`, and
//! `examples/cronjob.rs` its `src/main.rs`. The example's tests are `tests/integration/cronjob.rs`.

pub mod api;
pub mod controller;
pub mod schedule;
pub mod webhook;

use ctrl::manager::{BoxError, Manager, Options};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};

use api::{CronJob, cron_job, sample};

/// The CRDs of the operator's APIs.
pub const CRDS: &[fn() -> CustomResourceDefinition] = &[CronJob::crd];

/// The operator's manager on `client` with `opts`: the CronJob controller and its
/// webhooks, unless `ENABLE_WEBHOOKS=false` (kubebuilder's switch for running the manager
/// outside a cluster, where it has no serving certificate).
pub fn manager(client: kube::Client, opts: Options) -> Result<Manager, BoxError> {
    let webhooks = std::env::var("ENABLE_WEBHOOKS").map_or(true, |v| v != "false");
    manager_with(client, opts, webhooks)
}

/// [`manager`], with the webhooks only if `with_webhooks`.
pub fn manager_with(
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

/// The manager Deployment's environment (`cargo ctrl manifests`): none here (a
/// `create api --image` controller's `<KIND>_IMAGE` would go in it).
pub fn env() -> Vec<(String, String)> {
    Vec::new()
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
