//! The webhook server of a manager (Go's `mgr.GetWebhookServer()` and
//! `manager.Options.WebhookServer`): [`manager_server`] gives the one server a
//! manager runs, creating it with default [`Options`] and adding it to the manager
//! on first use; [`set_manager_server`] chooses it up front (port, cert dir).
//!
//! The manager holds the server as a runnable; this module only remembers which
//! server belongs to which live manager (keyed by the manager's identity, dropped
//! with it), so `ctrl-builder`'s `WebhookBuilder` and user code find the same one.

use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use super::{Options, Server};
use crate::manager::{Error, Manager};

type Entry = (usize, Weak<()>, Server);

fn table() -> &'static Mutex<Vec<Entry>> {
    static T: OnceLock<Mutex<Vec<Entry>>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Vec::new()))
}

/// The manager's identity: the address of its shared state, stable while it lives.
fn key(mgr: &Manager) -> usize {
    mgr.options() as *const _ as usize
}

/// Ties a server's liveness to the manager: the manager's runnable holds the strong
/// side, so when the manager (and its runnables) is dropped the entry expires.
struct Anchor {
    server: Server,
    _alive: Arc<()>,
}

#[async_trait::async_trait]
impl crate::manager::Runnable for Anchor {
    async fn start(
        &self,
        ctx: tokio_util::sync::CancellationToken,
    ) -> Result<(), crate::manager::BoxError> {
        crate::manager::Runnable::start(&self.server, ctx).await
    }
    fn need_leader_election(&self) -> bool {
        false
    }
    fn group(&self) -> crate::manager::Group {
        crate::manager::Group::Webhooks
    }
    async fn wait_ready(&self, ctx: tokio_util::sync::CancellationToken) -> bool {
        crate::manager::Runnable::wait_ready(&self.server, ctx).await
    }
    fn name(&self) -> String {
        "webhook server".into()
    }
}

fn lookup(entries: &mut Vec<Entry>, k: usize) -> Option<Server> {
    entries.retain(|(_, alive, _)| alive.strong_count() > 0);
    entries
        .iter()
        .find(|(key, _, _)| *key == k)
        .map(|(_, _, s)| s.clone())
}

fn install(mgr: &Manager, entries: &mut Vec<Entry>, server: Server) -> Result<Server, Error> {
    let alive = Arc::new(());
    entries.push((key(mgr), Arc::downgrade(&alive), server.clone()));
    mgr.add(Anchor {
        server: server.clone(),
        _alive: alive,
    })?;
    Ok(server)
}

/// The webhook server `mgr` runs, made with default [`Options`] (port 9443,
/// `<tmp>/k8s-webhook-server/serving-certs`) and added to `mgr` on first use. It
/// serves only once something is registered.
pub fn manager_server(mgr: &Manager) -> Result<Server, Error> {
    let mut entries = table().lock();
    if let Some(s) = lookup(&mut entries, key(mgr)) {
        return Ok(s);
    }
    install(mgr, &mut entries, Server::new(Options::default()))
}

/// Makes `server` the webhook server `mgr` runs (Go's `Options.WebhookServer`) and
/// adds it to `mgr`; call it before anything asks for the manager's server. If `mgr`
/// already has one, that one is kept and carried in the error.
pub fn set_manager_server(mgr: &Manager, server: Server) -> Result<Server, SetError> {
    let mut entries = table().lock();
    if let Some(existing) = lookup(&mut entries, key(mgr)) {
        return Err(SetError::AlreadySet(existing));
    }
    install(mgr, &mut entries, server).map_err(SetError::Manager)
}

/// Why [`set_manager_server`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// The manager already has a webhook server (carried here).
    #[error("the manager already has a webhook server")]
    AlreadySet(Server),
    /// The manager refused the server (it is stopping).
    #[error(transparent)]
    Manager(#[from] Error),
}
