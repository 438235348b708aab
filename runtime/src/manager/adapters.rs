//! How the runtime's own parts run under a manager: [`Runnable`] for a
//! [`Controller`] (leader-election group unless its options say otherwise), a
//! [`Cache`] (caches group, ready once synced), an [`http::Server`](Server)
//! (HTTP-servers group, or leader-election if it serves only on the leader), and [`Warmup`], the
//! Warmup-group runnable a runnable's warmup runs as. (The webhook server's, webhooks group, is
//! with the manager's webhook server, `webhooks`: feature `webhook`.)
//!
//! They live here, not beside the types, because the manager is above all of them:
//! a cache, a controller or a server does not know the manager exists (as in Go, where
//! the manager's `runnableGroup` sorts them by type).

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Group, Runnable};
use crate::cache::Cache;
use crate::controller::Controller;
use crate::error::BoxError;
use crate::http::Server;
use crate::reconcile::TypedRequest;

#[async_trait]
impl<R: TypedRequest> Runnable for Controller<R> {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        Controller::start(self, ctx).await.map_err(Into::into)
    }
    fn need_leader_election(&self) -> bool {
        Controller::need_leader_election(self)
    }
    fn need_warmup(&self) -> bool {
        self.options().warms_up()
    }
    async fn warmup(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        Controller::warmup(self, ctx).await.map_err(Into::into)
    }
    fn name(&self) -> String {
        format!("controller {}", Controller::name(self))
    }
}

#[async_trait]
impl Runnable for Cache {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        Cache::start(self, ctx).await.map_err(Into::into)
    }
    fn need_leader_election(&self) -> bool {
        false
    }
    fn group(&self) -> Group {
        Group::Caches
    }
    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        self.wait_for_cache_sync(ctx).await
    }
    fn name(&self) -> String {
        "cache".to_string()
    }
}

#[async_trait]
impl Runnable for Server {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        self.serve(ctx).await.map_err(Into::into)
    }
    fn need_leader_election(&self) -> bool {
        self.options().only_serve_when_leader
    }
    fn group(&self) -> Group {
        if self.need_leader_election() {
            Group::LeaderElection
        } else {
            Group::HttpServers
        }
    }
    fn name(&self) -> String {
        format!("{} server", self.kind())
    }
}

/// A runnable's [`Runnable::warmup`], run as a runnable of the Warmup group.
pub(super) struct Warmup(pub(super) Arc<dyn Runnable>);

#[async_trait]
impl Runnable for Warmup {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        self.0.warmup(ctx).await
    }
    fn group(&self) -> Group {
        Group::Warmup
    }
    fn name(&self) -> String {
        format!("warmup of {}", self.0.name())
    }
}
