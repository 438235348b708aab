//! The manager's webhook server (feature `webhook`): the one [`webhook::Server`] a
//! [`Manager`] runs (Go's `mgr.GetWebhookServer()`), made from
//! [`Options::webhook_server`](super::Options::webhook_server) in [`Manager::new`] and added
//! to the manager the first time it is handed out, where it runs as a [`Runnable`] of the
//! webhooks group, ready once it listens (as `adapters` makes the other servers runnables).
//! Without the feature a manager has no
//! webhook server and none of this is compiled.

use std::sync::Once;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Group, Manager, Options, Runnable};
use crate::error::BoxError;
use crate::webhook;

/// The server and whether it was added to the manager yet.
pub(super) struct Slot {
    server: webhook::Server,
    added: Once,
}

impl Slot {
    /// [`Options::webhook_server`], or one with default `webhook::Options`.
    pub(super) fn new(opts: &Options) -> Self {
        let server = opts
            .webhook_server
            .clone()
            .unwrap_or_else(|| webhook::Server::new(webhook::Options::default()));
        Self {
            server,
            added: Once::new(),
        }
    }
}

impl Manager {
    /// The webhook server this manager runs (Go's `mgr.GetWebhookServer()`):
    /// [`Options::webhook_server`], or one with default `webhook::Options`. The
    /// first call adds it to the manager (Webhooks group, started after the HTTP
    /// servers and before the caches); it serves only once a handler is registered,
    /// so asking for it costs nothing when no webhook is set up.
    pub fn webhook_server(&self) -> webhook::Server {
        let slot = &self.inner.webhook;
        let server = slot.server.clone();
        slot.added.call_once(|| {
            if let Err(error) = self.add(server.clone()) {
                tracing::error!(%error, "unable to add the webhook server to the manager");
            }
        });
        server
    }

    /// What the manager's webhook server serves ([`webhook::Server::registrations`]),
    /// without adding the server to the manager as [`Manager::webhook_server`] does:
    /// what `ctrl::manifests` generates the webhook configurations from.
    pub fn webhook_registrations(&self) -> Vec<webhook::Registration> {
        self.inner.webhook.server.registrations()
    }
}

#[async_trait]
impl Runnable for webhook::Server {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        self.serve(ctx).await.map_err(Into::into)
    }
    fn need_leader_election(&self) -> bool {
        false
    }
    fn group(&self) -> Group {
        Group::Webhooks
    }
    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        self.wait_serving(ctx).await
    }
    fn name(&self) -> String {
        "webhook server".into()
    }
}
