//! The controller, written the client-go sample-controller way — no Manager, no
//! Builder, every piece by hand: a shared informer from ctrl's [`Cache`] whose
//! event handlers put `namespace/name` keys in a [`RateLimitingQueue`] (with
//! [`default_controller_rate_limiter`]), a lister (the informer's store),
//! `threadiness` workers looping on [`Controller::process_next_work_item`], and a
//! [`Controller::sync_handler`] that makes the fake [`Hypervisor`] match the object
//! and writes its `status`. Errors go back with `add_rate_limited`, successes are
//! `forget`-ed; on stop the queue is shut down and the workers drain it.

use std::sync::Arc;

use ctrl::CancellationToken;
use ctrl::cache::{Cache, Informer, Notification, object_key};
use ctrl::controllerutil::{add_finalizer, contains_finalizer, remove_finalizer};
use ctrl::workqueue::{
    QueueConfig, RateLimitingQueue, default_controller_rate_limiter, prometheus_metrics_provider,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::task::JoinSet;

use super::crd::{
    ACTION_STOP, FINALIZER, PHASE_ACTIVE, ServerStatus, VirtualMachine, VirtualMachineSpec,
};
use super::hypervisor::{Hypervisor, Server};

/// The work queue's name (its metrics' `name` label), as the article names it.
pub const QUEUE_NAME: &str = "VirtualMachines";

/// Why the controller could not run.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The controller (the article's `Controller` struct).
pub struct Controller {
    client: kube::Client,
    lister: Informer<VirtualMachine>,
    queue: RateLimitingQueue<String>,
    hypervisor: Hypervisor,
}

impl Controller {
    /// Go's `NewController`: the queue, and event handlers on the VirtualMachine
    /// informer of `cache` that enqueue the key of every added, updated or deleted VM.
    pub fn new(client: kube::Client, cache: &Cache, hypervisor: Hypervisor) -> Arc<Self> {
        let queue = RateLimitingQueue::new(
            QueueConfig::new(QUEUE_NAME)
                .with_rate_limiter(default_controller_rate_limiter())
                .with_metrics(prometheus_metrics_provider()),
        );
        let informer = cache.get_informer::<VirtualMachine>();
        let enqueue = queue.clone();
        informer.add_event_handler(move |n: Notification<VirtualMachine>| {
            let vm = match &n {
                Notification::Create(e) => &e.object,
                Notification::Update(e) => &e.object_new,
                Notification::Delete(e) => &e.object,
            };
            let name = vm.metadata.name.as_deref().unwrap_or_default();
            enqueue.add(object_key(vm.metadata.namespace.as_deref(), name));
        });
        Arc::new(Self {
            client,
            lister: informer,
            queue,
            hypervisor,
        })
    }

    /// Go's `Run`: waits for the informer's cache to sync, starts `threadiness`
    /// workers, and on `stop` shuts the queue down and waits for the workers to drain
    /// it.
    pub async fn run(
        self: &Arc<Self>,
        threadiness: usize,
        stop: CancellationToken,
    ) -> Result<(), Error> {
        tracing::info!("Starting VirtualMachine controller");
        tracing::info!("Waiting for informer caches to sync");
        if !self.lister.wait_for_sync(stop.clone()).await {
            if stop.is_cancelled() {
                return Ok(());
            }
            return Err("failed to wait for caches to sync".into());
        }
        tracing::info!(threadiness, "Starting workers");
        let mut workers = JoinSet::new();
        for _ in 0..threadiness.max(1) {
            let c = self.clone();
            workers.spawn(async move { while c.process_next_work_item().await {} });
        }
        tracing::info!("Started workers");
        stop.cancelled().await;
        tracing::info!("Shutting down workers");
        self.queue.shut_down_with_drain().await;
        while let Some(joined) = workers.join_next().await {
            joined?;
        }
        tracing::info!("Workers drained");
        Ok(())
    }

    /// Takes one key from the queue and syncs it: `forget` on success,
    /// `add_rate_limited` on error, `done` either way. False once the queue has shut
    /// down and is empty.
    pub async fn process_next_work_item(&self) -> bool {
        let Some(key) = self.queue.get().await else {
            return false;
        };
        match self.sync_handler(&key).await {
            Ok(()) => {
                self.queue.forget(&key);
                tracing::info!("Controller successfully synced '{key}'");
            }
            Err(error) => {
                tracing::warn!(%error, "error syncing '{key}', requeuing");
                self.queue.add_rate_limited(key.clone());
            }
        }
        self.queue.done(&key);
        true
    }

    /// Brings the hypervisor in line with VirtualMachine `key` and writes its status:
    /// adds the finalizer first; creates the server on first sight, resizes or powers
    /// it as the spec says; deletes it when the object is being deleted, then lets
    /// the object go.
    pub async fn sync_handler(&self, key: &str) -> Result<(), kube::Error> {
        let Some((ns, name)) = key.split_once('/') else {
            tracing::error!("invalid resource key: {key}");
            return Ok(());
        };
        let Some(vm) = self.lister.store().get(key) else {
            // Gone: the finalizer deleted the server (unless it was removed by hand).
            if self.hypervisor.delete(key) {
                tracing::info!("'{key}' is gone: deleted its server");
            }
            return Ok(());
        };
        let api: Api<VirtualMachine> = Api::namespaced(self.client.clone(), ns);
        if vm.metadata.deletion_timestamp.is_some() {
            return self.finalize(&api, &vm, key).await;
        }
        if !contains_finalizer(vm.as_ref(), FINALIZER) {
            let mut with = (*vm).clone();
            add_finalizer(&mut with, FINALIZER);
            api.replace(name, &PostParams::default(), &with).await?;
            return Ok(()); // the update comes back as an event
        }
        let server = self.ensure_server(key, &vm.spec);
        self.update_status(&api, &vm, &server).await
    }

    /// The object is being deleted: delete its server, then remove the finalizer.
    async fn finalize(
        &self,
        api: &Api<VirtualMachine>,
        vm: &VirtualMachine,
        key: &str,
    ) -> Result<(), kube::Error> {
        if !contains_finalizer(vm, FINALIZER) {
            return Ok(());
        }
        if self.hypervisor.delete(key) {
            tracing::info!("'{key}' is being deleted: deleted its server");
        }
        let mut without = vm.clone();
        remove_finalizer(&mut without, FINALIZER);
        let name = vm.metadata.name.as_deref().unwrap_or_default();
        api.replace(name, &PostParams::default(), &without).await?;
        Ok(())
    }

    /// The server for `key`, created, resized or powered to match `spec`.
    fn ensure_server(&self, key: &str, spec: &VirtualMachineSpec) -> Server {
        let running = spec.action.as_deref() != Some(ACTION_STOP);
        match self.hypervisor.get(key) {
            None => {
                let s = self.hypervisor.create(key, spec.resource.clone(), running);
                tracing::info!("'{key}': created server {s}");
                s
            }
            Some(s) if s.resource == spec.resource && s.running == running => s,
            Some(s) => {
                let now = self.hypervisor.update(key, spec.resource.clone(), running);
                let now = now.unwrap_or(s);
                tracing::info!("'{key}': server now {now}");
                now
            }
        }
    }

    /// Writes `status` (phase `Active`, the server's state and usage, the time) if it
    /// says something new: an unchanged status is not written again, so the
    /// controller's own writes do not loop.
    async fn update_status(
        &self,
        api: &Api<VirtualMachine>,
        vm: &VirtualMachine,
        server: &Server,
    ) -> Result<(), kube::Error> {
        let observed = ServerStatus {
            state: server.state().to_string(),
            usage: server.usage(),
        };
        let current = vm.status.as_ref();
        if current.and_then(|s| s.phase.as_deref()) == Some(PHASE_ACTIVE)
            && current.and_then(|s| s.server.as_ref()) == Some(&observed)
        {
            return Ok(());
        }
        let status = json!({ "status": {
            "phase": PHASE_ACTIVE,
            "server": observed,
            "lastUpdateTime": Time(ctrl::clock::now()),
        }});
        let name = vm.metadata.name.as_deref().unwrap_or_default();
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok(())
    }
}

/// Go's `main` after the clientset: a cache (the informer factory) on `client`, the
/// controller, both running until `stop`; returns once the workers have drained.
pub async fn run(
    client: kube::Client,
    hypervisor: Hypervisor,
    threadiness: usize,
    stop: CancellationToken,
) -> Result<(), Error> {
    let cache = Cache::new(client.clone(), Default::default());
    let controller = Controller::new(client, &cache, hypervisor);
    let informers = {
        let (cache, stop) = (cache.clone(), stop.clone());
        tokio::spawn(async move { cache.start(stop).await })
    };
    controller.run(threadiness, stop).await?;
    informers.await??;
    Ok(())
}
