//! The sharder (upstream's sharder: its `sharder` and `shardlease` controllers and its
//! webhook): assigns a ring's objects to its shards and keeps the assignment right as
//! shards come and go.
//!
//! [`Sharder`] is a leader-elected [`Runnable`]: only one sharder of a ring acts at a
//! time. Each tick (every `lease_poll`) it reads the shard leases (`members`), takes
//! over those gone Uncertain and deletes Orphaned ones; when the set of available
//! shards changed (and once more on the next tick, as the webhook's watched view may
//! lag the change by a moment), while its last sync changed objects or found drains not
//! yet acknowledged, or every `sync_period`, it syncs every object of the ring (`sync`):
//! unassigned objects and objects of dead shards get their new shard at once, main
//! objects of shards that are still available but no longer own them get the drain
//! label (`assign` decides), and writes the ring's status with its `Ready` condition
//! (`status`). Its webhook (`webhook`), registered on a manager's webhook server with
//! [`Sharder::register_webhook`], assigns objects as they are created or let go.
//! [`RingSharders`] (`rings`) runs one sharder per `ControllerRing` of a cluster, as the
//! `ctrl-sharder` binary does.

mod assign;
mod members;
mod rings;
mod status;
mod sync;
mod view;
mod webhook;

use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use rings::{RingSharders, WebhookEndpoint};
pub use status::CONDITION_READY;
pub use webhook::{webhook_configuration, webhook_path};

use super::{ControllerRing, metrics};
use crate::error::BoxError;
use crate::manager::Runnable;
use members::Members;

/// The holder identity the sharder writes into leases it takes over (upstream's
/// `IdentityShardLeaseController`).
pub const IDENTITY_SHARDER: &str = "shardlease-controller";

/// How a [`Sharder`] runs.
#[derive(Clone, Debug)]
pub struct SharderOptions {
    /// The ring's name (its `ControllerRing`).
    pub ring: String,
    /// The namespace of the shard leases.
    pub lease_namespace: String,
    /// How often every object is checked even when membership did not change.
    /// Defaults to 5 minutes (upstream's default).
    pub sync_period: Duration,
    /// How often the shard leases are read. Defaults to 2 s.
    pub lease_poll: Duration,
}

impl SharderOptions {
    /// The defaults for `ring`, leases in `lease_namespace`.
    pub fn new(ring: impl Into<String>, lease_namespace: impl Into<String>) -> Self {
        Self {
            ring: ring.into(),
            lease_namespace: lease_namespace.into(),
            sync_period: Duration::from_secs(300),
            lease_poll: Duration::from_secs(2),
        }
    }
}

/// The sharder of one ring; see the module docs.
pub struct Sharder {
    client: kube::Client,
    opts: SharderOptions,
    /// Where this replica serves the webhook (`https://host:port`) and its CA's PEM.
    webhook: Option<(String, String)>,
}

impl std::fmt::Debug for Sharder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharder")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// What one tick synced against.
struct Synced {
    /// The available shards.
    shards: Vec<String>,
    /// Whether it changed anything or waits on a drain: sync again next tick.
    busy: bool,
}

impl Sharder {
    /// A sharder for `opts.ring` talking through `client`.
    pub fn new(client: kube::Client, opts: SharderOptions) -> Self {
        Self {
            client,
            opts,
            webhook: None,
        }
    }

    /// Points the ring's MutatingWebhookConfiguration ([`webhook_configuration`]) at
    /// `base_url` (this replica's webhook server, trusted with `ca_pem`) whenever this
    /// sharder becomes the leader, so the API server calls the active sharder.
    pub fn with_webhook_registration(
        mut self,
        base_url: impl Into<String>,
        ca_pem: impl Into<String>,
    ) -> Self {
        self.webhook = Some((base_url.into(), ca_pem.into()));
        self
    }

    /// Creates or replaces the webhook configuration, if one is wanted.
    async fn install_webhook(&self) -> Result<(), kube::Error> {
        let Some((url, ca)) = &self.webhook else {
            return Ok(());
        };
        let rings: Api<ControllerRing> = Api::all(self.client.clone());
        let ring = rings.get(&self.opts.ring).await?;
        let cfg = webhook_configuration(&ring, url, ca);
        let api: Api<MutatingWebhookConfiguration> = Api::all(self.client.clone());
        let name = cfg.metadata.name.clone().unwrap_or_default();
        let pp = kube::api::PostParams::default();
        match api.get_opt(&name).await? {
            Some(old) => {
                let mut cfg = cfg;
                cfg.metadata.resource_version = old.metadata.resource_version;
                api.replace(&name, &pp, &cfg).await?;
            }
            None => {
                api.create(&pp, &cfg).await?;
            }
        }
        tracing::info!(ring = %self.opts.ring, %url, webhook = %name, "Registered the sharder webhook");
        Ok(())
    }

    /// Serves the ring's webhook at [`webhook_path`] on `server` (every replica may
    /// serve it; the sharder need not lead).
    pub fn register_webhook(
        &self,
        server: &crate::webhook::Server,
    ) -> Result<(), crate::webhook::Error> {
        let handler = webhook::SharderWebhook::new(
            self.client.clone(),
            &self.opts.ring,
            &self.opts.lease_namespace,
        );
        let wh = crate::webhook::admission::Webhook::new(handler);
        server.register(&webhook_path(&self.opts.ring), wh)
    }

    /// One tick: maintain leases; sync objects if `force` or membership changed since
    /// `last`; write the ring's status (`webhook` is the outcome of registering the
    /// webhook, if this tick tried). Returns what it synced against, if it synced.
    async fn tick(
        &self,
        last: Option<&[String]>,
        force: bool,
        webhook: Option<Result<(), String>>,
    ) -> Result<Option<Synced>, kube::Error> {
        let ring_name = &self.opts.ring;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.opts.lease_namespace);
        let mut members = Members::load(&leases, ring_name).await?;
        if members.maintain(&leases, ring_name).await {
            members = Members::load(&leases, ring_name).await?;
        }
        let available: Vec<String> = members
            .shards
            .iter()
            .filter(|(_, (_, s))| s.is_available())
            .map(|(n, _)| n.clone())
            .collect();
        metrics::RING_SIZE
            .with_label_values(&[ring_name])
            .set(members.available() as i64);
        let rings: Api<ControllerRing> = Api::all(self.client.clone());
        let Some(ring) = rings.get_opt(ring_name).await? else {
            tracing::warn!(ring = %ring_name, "ControllerRing not found, nothing to shard");
            return Ok(None);
        };
        let webhook_failed = webhook.as_ref().is_some_and(Result::is_err);
        if !force && !webhook_failed && last == Some(available.as_slice()) {
            status::write(&rings, &ring, &members, None).await;
            return Ok(None);
        }
        if last != Some(available.as_slice()) {
            members.log_judgement(ring_name);
        }
        let counts = sync::sync_ring(&self.client, &ring, &members).await?;
        let mut problems = counts.problems.clone();
        problems.extend(webhook.and_then(Result::err));
        let outcome = if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        };
        status::write(&rings, &ring, &members, Some(&outcome)).await;
        tracing::info!(ring = %ring_name, shards = ?available, assigned = counts.assigned, drained = counts.drained, ?problems, "Synced ring");
        Ok(Some(Synced {
            shards: available,
            // A drain the shard has not acknowledged yet keeps the sync going: its
            // acknowledgement passes the webhook, and when that call fails (the webhook is
            // slow or down; failurePolicy Ignore) the object is left without a shard, which
            // only a sync assigns — at the next lease poll instead of the next sync period.
            // So does a write that conflicted with a change made since the list.
            busy: counts.assigned + counts.drained + counts.draining + counts.conflicts > 0,
        }))
    }
}

#[async_trait]
impl Runnable for Sharder {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        let mut last: Option<Vec<String>> = None;
        let mut next_full = Instant::now();
        let mut busy = false;
        let mut webhook_installed = self.webhook.is_none();
        loop {
            let webhook = if webhook_installed {
                None
            } else {
                let r = self.install_webhook().await.map_err(|e| {
                    tracing::warn!(ring = %self.opts.ring, error = %e, "Could not register the sharder webhook");
                    format!("error reconciling webhooks for ControllerRing: {e}")
                });
                webhook_installed = r.is_ok();
                Some(r)
            };
            let force = busy || Instant::now() >= next_full;
            match self.tick(last.as_deref(), force, webhook).await {
                Ok(Some(synced)) => {
                    // The webhook's watched view may assign by the old membership for a
                    // moment after a change: sync once more on the next tick.
                    let changed = last.as_deref() != Some(synced.shards.as_slice());
                    busy = synced.busy || changed;
                    last = Some(synced.shards);
                    next_full = Instant::now() + self.opts.sync_period;
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(ring = %self.opts.ring, %error, "Sharder sync failed"),
            }
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(self.opts.lease_poll) => {}
            }
        }
    }

    fn name(&self) -> String {
        format!("sharder {}", self.opts.ring)
    }
}
