//! The leader-election seam: how the manager becomes the leader before it starts
//! the leader-election group (controller-runtime's `startLeaderElection`).
//!
//! Without leader election, [`campaign`] starts the group at once. With it, the
//! elector ([`crate::leaderelection`]) runs in its own task: once it holds the Lease,
//! the group starts (in another task, so renewing never waits for it) and
//! `elected()` resolves; if it stops leading, it reports
//! [`Error::LeaderElectionLost`] and the manager stops with no grace period. The
//! elector outlives the manager's run: [`Leader::stop`] cancels it only after the
//! groups have stopped, so the lease is renewed — and, with release on cancel,
//! released — only once no leader-election runnable is running.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::group::RunnableGroup;
use super::{Error, Options};
use crate::leaderelection::{ElectorConfig, LeaderElector, Lock, LockOptions, new_resource_lock};

/// The manager's leader-election state: the elector until `start`, then its task.
pub(super) struct Leader {
    identity: Option<String>,
    elector: Mutex<Option<LeaderElector>>,
    running: Mutex<Option<(CancellationToken, JoinHandle<()>)>>,
    errors: mpsc::UnboundedSender<Error>,
    /// `leader_election_release_on_cancel`; the release is done here, not by the
    /// elector, so it can be skipped when runnables outlived the grace period.
    release_on_cancel: bool,
    may_release: Arc<AtomicBool>,
}

impl Leader {
    /// The elector for `opts` (none when leader election is off); fails like Go's
    /// `NewManager` on a missing id or namespace or inconsistent timings.
    pub(super) fn new(
        client: &kube::Client,
        opts: &Options,
        errors: mpsc::UnboundedSender<Error>,
    ) -> Result<Self, Error> {
        let elector = if opts.leader_election {
            let cfg = ElectorConfig {
                lease_duration: opts.lease_duration,
                renew_deadline: opts.renew_deadline,
                retry_period: opts.retry_period,
                release_on_cancel: false,
                name: opts.leader_election_id.clone(),
            };
            Some(LeaderElector::new_boxed(lock(client, opts)?, cfg)?)
        } else {
            None
        };
        Ok(Self {
            identity: elector.as_ref().map(|e| e.identity().to_string()),
            elector: Mutex::new(elector),
            running: Mutex::new(None),
            errors,
            release_on_cancel: opts.leader_election_release_on_cancel,
            may_release: Arc::new(AtomicBool::new(false)),
        })
    }

    /// This manager's leader-election identity, if leader election is on.
    pub(super) fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// Stops the elector and waits for it. It releases the lease if so configured
    /// and `runnables_stopped` (no leader-election runnable outlived the grace
    /// period: releasing then could give two replicas running leader work).
    pub(super) async fn stop(&self, runnables_stopped: bool) {
        let running = self.running.lock().take();
        if let Some((ctx, task)) = running {
            self.may_release.store(
                self.release_on_cancel && runnables_stopped,
                Ordering::SeqCst,
            );
            ctx.cancel();
            if let Err(error) = task.await {
                tracing::error!(%error, "the leader elector task failed");
            }
        }
    }

    /// Ends the elector's task at once, releasing nothing (a crashed process's Lease
    /// expires; the others wait it out).
    pub(super) fn abort(&self) {
        if let Some((_, task)) = self.running.lock().take() {
            task.abort();
        }
    }
}

/// The lock `opts` ask for: the custom one, else the Lease `leader_election_id`
/// through `leader_election_config`'s client or the manager's.
fn lock(client: &kube::Client, opts: &Options) -> Result<Box<dyn Lock>, Error> {
    if let Some(custom) = &opts.leader_election_resource_lock {
        return custom.take().ok_or(Error::ResourceLockTaken);
    }
    let client = match &opts.leader_election_config {
        Some(config) => crate::metrics::client::new_client(config.clone(), false)
            .map_err(Error::LeaderElectionClient)?,
        None => client.clone(),
    };
    let lock = new_resource_lock(
        client,
        &LockOptions {
            id: opts.leader_election_id.clone(),
            namespace: opts.leader_election_namespace.clone(),
            labels: opts.leader_election_labels.clone(),
            renew_deadline: opts.renew_deadline,
        },
    )?;
    Ok(Box::new(lock))
}

/// Becomes the leader — at once without leader election, else in the elector's
/// task — then starts the leader-election runnables and cancels `elected`.
pub(super) async fn campaign(
    leader: &Leader,
    group: &Arc<RunnableGroup>,
    elected: &CancellationToken,
) -> Result<(), Error> {
    let Some(mut elector) = leader.elector.lock().take() else {
        group.start().await?;
        elected.cancel();
        return Ok(());
    };
    let ctx = CancellationToken::new();
    let (group, elected, errors) = (group.clone(), elected.clone(), leader.errors.clone());
    let may_release = leader.may_release.clone();
    let token = ctx.clone();
    // The election's transitions (acquired, lost, released, new leader observed) are the
    // events of this span: with the `otel` feature, span events of one trace.
    let span = tracing::info_span!(
        "leader_election",
        lease = %elector.config().name,
        identity = %elector.identity(),
    );
    let task = crate::task::spawn(
        async move {
            if !elector.acquire(&token).await {
                return;
            }
            let starter_errors = errors.clone();
            crate::task::spawn(async move {
                match group.start().await {
                    Ok(()) => elected.cancel(),
                    Err(e) => {
                        let _ = starter_errors.send(e);
                    }
                }
            });
            if !elector.renew(&token).await {
                let _ = errors.send(Error::LeaderElectionLost);
            } else if may_release.load(Ordering::SeqCst) {
                elector.release().await;
            }
        }
        .instrument(span),
    );
    *leader.running.lock() = Some((ctx, task));
    Ok(())
}
