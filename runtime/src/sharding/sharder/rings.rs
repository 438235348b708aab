//! Every ring of a cluster (upstream's sharder deployment, which shards every
//! `ControllerRing` it finds): [`RingSharders`] watches the list of rings and runs one
//! [`Sharder`] per ring, with its webhook served on one shared server, for shards in
//! any language. The `ctrl-sharder` binary runs it under leader election.
//!
//! Rings are found by listing `ControllerRing`s every `lease_poll`; a new ring gets its
//! sharder (and webhook path) at the next poll, a deleted ring's sharder stops. Its
//! webhook path stays registered (a server cannot unregister a path) and answers with
//! an error the API server ignores (`failurePolicy: Ignore`) until the ring is back.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{Api, ListParams};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Sharder, SharderOptions};
use crate::error::BoxError;
use crate::manager::Runnable;
use crate::sharding::ControllerRing;
use crate::webhook::Server;

/// Where the sharders' webhooks are served and how the API server reaches them.
#[derive(Clone, Debug)]
pub struct WebhookEndpoint {
    /// The server the webhooks are registered on: the manager's, as
    /// `Manager::webhook_server` returns it (which also makes the manager serve it).
    pub server: Server,
    /// The URL the API server calls (`https://host:port`), without the path.
    pub base_url: String,
    /// The PEM of the CA that signed the server's certificate.
    pub ca_pem: String,
}

/// Runs a [`Sharder`] for every `ControllerRing` of the cluster; see the module docs.
pub struct RingSharders {
    client: kube::Client,
    /// The options every ring's sharder starts from (`ring` is replaced).
    template: SharderOptions,
    webhook: Option<WebhookEndpoint>,
}

impl std::fmt::Debug for RingSharders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSharders")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

/// The handler of the rings' path prefix: no ring, nothing to assign.
struct NoRing;

#[async_trait]
impl crate::webhook::admission::Handler for NoRing {
    async fn handle(
        &self,
        _req: &crate::webhook::admission::Request,
    ) -> crate::webhook::admission::Response {
        crate::webhook::admission::Response::allowed("no ControllerRing named in the path")
    }
}

/// One ring's running sharder.
struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl RingSharders {
    /// Sharders for every ring, with `template`'s lease namespace and timings (its
    /// `ring` is ignored).
    pub fn new(client: kube::Client, template: SharderOptions) -> Self {
        Self {
            client,
            template,
            webhook: None,
        }
    }

    /// Serves every ring's webhook on `endpoint.server` and registers it with the API
    /// server at `endpoint.base_url` while this sharder leads.
    ///
    /// Rings are found only once the sharder leads, after the manager started its
    /// webhook server, and a server with no path does not start: so the ring-less
    /// prefix of the rings' paths is served at once, allowing every request unchanged.
    pub fn with_webhook(
        mut self,
        endpoint: WebhookEndpoint,
    ) -> Result<Self, crate::webhook::Error> {
        let path = super::webhook_path("");
        let path = path.trim_end_matches('/');
        if !endpoint.server.paths().iter().any(|p| p == path) {
            let allow = crate::webhook::admission::Webhook::new(NoRing);
            endpoint.server.register(path, allow)?;
        }
        self.webhook = Some(endpoint);
        Ok(self)
    }

    /// The sharder of ring `name`, its webhook registered on the server if not yet.
    fn sharder(&self, name: &str) -> Result<Sharder, BoxError> {
        let opts = SharderOptions {
            ring: name.to_string(),
            ..self.template.clone()
        };
        let mut sharder = Sharder::new(self.client.clone(), opts);
        if let Some(w) = &self.webhook {
            sharder = sharder.with_webhook_registration(w.base_url.clone(), w.ca_pem.clone());
            let path = super::webhook_path(name);
            if !w.server.paths().contains(&path) {
                sharder.register_webhook(&w.server)?;
            }
        }
        Ok(sharder)
    }

    /// Starts sharders for new rings and stops those of deleted ones.
    async fn reconcile(&self, ctx: &CancellationToken, running: &mut HashMap<String, Running>) {
        let rings: Api<ControllerRing> = Api::all(self.client.clone());
        let names: Vec<String> = match rings.list_metadata(&ListParams::default()).await {
            Ok(list) => list
                .items
                .into_iter()
                .filter_map(|r| r.metadata.name)
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "Could not list ControllerRings");
                return;
            }
        };
        running.retain(|name, r| {
            let keep = names.contains(name) && !r.task.is_finished();
            if !keep {
                tracing::info!(ring = %name, "Stopping the sharder of a deleted ring");
                r.stop.cancel();
            }
            keep
        });
        for name in names {
            if running.contains_key(&name) {
                continue;
            }
            match self.sharder(&name) {
                Ok(sharder) => {
                    tracing::info!(ring = %name, "Starting the sharder of a ring");
                    let stop = ctx.child_token();
                    let token = stop.clone();
                    let sharder = Arc::new(sharder);
                    let task = tokio::spawn(async move {
                        let _ = sharder.start(token).await;
                    });
                    running.insert(name, Running { stop, task });
                }
                Err(error) => {
                    tracing::warn!(ring = %name, %error, "Could not start the ring's sharder")
                }
            }
        }
    }
}

#[async_trait]
impl Runnable for RingSharders {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        let mut running = HashMap::new();
        while !ctx.is_cancelled() {
            self.reconcile(&ctx, &mut running).await;
            tokio::select! {
                _ = ctx.cancelled() => {}
                _ = tokio::time::sleep(self.template.lease_poll) => {}
            }
        }
        for (_, r) in running.drain() {
            r.stop.cancel();
            let _ = r.task.await;
        }
        Ok(())
    }

    fn name(&self) -> String {
        "sharder (every ControllerRing)".into()
    }
}
