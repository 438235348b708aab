//! [`Runnable`]: anything the manager starts and stops (controller-runtime's
//! `manager.Runnable` and `LeaderElectionRunnable`), the [`Group`] it runs in, and
//! [`RunnableFunc`], the closure form.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::error::BoxError;

/// The manager's runnable groups (controller-runtime's `runnables`). They start in
/// [`Group::START_ORDER`] and stop in [`Group::STOP_ORDER`]; the manager looks a group
/// up by its place in `START_ORDER`, never by the order of this declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// The metrics and health probe servers (and any user [`http::Server`](crate::http::Server)).
    HttpServers,
    /// Webhook servers: up before any cache, so conversion webhooks can serve the
    /// caches' first lists.
    Webhooks,
    /// Caches: the manager waits for each to report ready ([`Runnable::wait_ready`]).
    Caches,
    /// Runnables that do not need leader election; started after the caches synced.
    Others,
    /// The warmup of runnables that ask for one ([`Runnable::need_warmup`]): started
    /// on every replica after Others and before leader election, so a controller's
    /// sources are synced by the time its replica is elected (Go's `Warmup` group).
    Warmup,
    /// Runnables that run only on the leader (controllers, by default).
    LeaderElection,
}

/// The leader-election runnables start last, once elected (`Manager::start` campaigns
/// for the last group of `START_ORDER`).
const _: () = assert!(matches!(Group::START_ORDER[5], Group::LeaderElection));

impl Group {
    /// All groups in start order (Go's `controllerManager.Start`): each group starts
    /// once the one before it is ready; the last, [`Group::LeaderElection`], once this
    /// replica is elected. The one place this order is written.
    pub const START_ORDER: [Group; 6] = [
        Group::HttpServers,
        Group::Webhooks,
        Group::Caches,
        Group::Others,
        Group::Warmup,
        Group::LeaderElection,
    ];

    /// All groups in stop order (Go's `engageStopProcedure`): the runnables first (those
    /// without leader election, then the leader's, then the warmups), then what they
    /// used, in reverse start order. The one place this order is written.
    pub const STOP_ORDER: [Group; 6] = [
        Group::Others,
        Group::LeaderElection,
        Group::Warmup,
        Group::Caches,
        Group::Webhooks,
        Group::HttpServers,
    ];

    /// This group's place in [`Group::START_ORDER`].
    pub(super) fn start_index(self) -> usize {
        Self::START_ORDER
            .iter()
            .position(|g| *g == self)
            .expect("START_ORDER lists every group")
    }

    /// The group an ordinary runnable joins: [`Group::LeaderElection`] if it needs
    /// leader election, else [`Group::Others`].
    pub fn for_leader_election(need: bool) -> Self {
        if need {
            Group::LeaderElection
        } else {
            Group::Others
        }
    }

    /// A short name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::HttpServers => "http servers",
            Group::Webhooks => "webhooks",
            Group::Caches => "caches",
            Group::Others => "non leader election runnables",
            Group::Warmup => "warmup runnables",
            Group::LeaderElection => "leader election runnables",
        }
    }
}

/// Something the manager runs: a controller, a cache, a server, your own loop.
///
/// `start` runs until `ctx` is cancelled and then returns (returning early with `Ok`
/// is fine; returning an `Err` stops the whole manager, and the error is what
/// `Manager::start` returns). Only `start` is required; the other methods say where
/// the runnable goes, as controller-runtime decides by type.
#[async_trait]
pub trait Runnable: Send + Sync + 'static {
    /// Runs until `ctx` is cancelled.
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError>;

    /// Whether to run only on the elected leader (Go's `LeaderElectionRunnable`).
    /// Default true.
    fn need_leader_election(&self) -> bool {
        true
    }

    /// The group to run in; by default chosen by [`Runnable::need_leader_election`].
    fn group(&self) -> Group {
        Group::for_leader_election(self.need_leader_election())
    }

    /// Resolves `true` once the runnable is ready (a cache: synced) or `false` if it
    /// cannot become ready before `ctx` is cancelled. The manager waits for every
    /// runnable of a group to be ready before it starts the next group. Default: at once.
    async fn wait_ready(&self, _ctx: CancellationToken) -> bool {
        true
    }

    /// A name for logs and errors. Default: the type name.
    fn name(&self) -> String {
        std::any::type_name::<Self>().to_string()
    }

    /// Whether the manager also runs [`Runnable::warmup`], in the [`Group::Warmup`]
    /// group, on every replica before leader election (Go's `warmupRunnable`).
    /// Default false.
    fn need_warmup(&self) -> bool {
        false
    }

    /// Prepares, before leader election, what `start` will need (a controller starts
    /// its sources); returns once done. Its `ctx` is cancelled when the Warmup group
    /// stops, after the leader-election runnables. Default: nothing.
    async fn warmup(&self, _ctx: CancellationToken) -> Result<(), BoxError> {
        Ok(())
    }
}

#[async_trait]
impl<R: Runnable + ?Sized> Runnable for Arc<R> {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        (**self).start(ctx).await
    }
    fn need_leader_election(&self) -> bool {
        (**self).need_leader_election()
    }
    fn group(&self) -> Group {
        (**self).group()
    }
    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        (**self).wait_ready(ctx).await
    }
    fn name(&self) -> String {
        (**self).name()
    }
    fn need_warmup(&self) -> bool {
        (**self).need_warmup()
    }
    async fn warmup(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        (**self).warmup(ctx).await
    }
}

type StartFn = dyn Fn(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync;

/// A [`Runnable`] from an async closure (Go's `RunnableFunc`); it needs leader
/// election unless told otherwise.
///
/// ```
/// # use ctrl_runtime::manager::RunnableFunc;
/// let r = RunnableFunc::new(|ctx| async move {
///     ctx.cancelled().await;
///     Ok(())
/// })
/// .named("ticker")
/// .with_leader_election(false);
/// ```
pub struct RunnableFunc {
    f: Arc<StartFn>,
    name: String,
    need_leader_election: bool,
}

impl std::fmt::Debug for RunnableFunc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnableFunc")
            .field("name", &self.name)
            .field("need_leader_election", &self.need_leader_election)
            .finish()
    }
}

impl RunnableFunc {
    /// A runnable running `f(ctx)`.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        Self {
            f: Arc::new(move |ctx| Box::pin(f(ctx))),
            name: "RunnableFunc".to_string(),
            need_leader_election: true,
        }
    }

    /// Names it (for logs and errors).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets whether it runs only on the leader.
    pub fn with_leader_election(mut self, need: bool) -> Self {
        self.need_leader_election = need;
        self
    }
}

#[async_trait]
impl Runnable for RunnableFunc {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        (self.f)(ctx).await
    }
    fn need_leader_election(&self) -> bool {
        self.need_leader_election
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::Group;

    #[test]
    fn each_order_lists_every_group_once() {
        for (i, g) in Group::START_ORDER.into_iter().enumerate() {
            assert_eq!(g.start_index(), i, "{g:?}");
        }
        let mut stop = Group::STOP_ORDER.to_vec();
        stop.sort_by_key(|g| g.start_index());
        assert_eq!(stop, Group::START_ORDER);
    }
}
