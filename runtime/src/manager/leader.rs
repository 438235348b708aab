//! The leader-election seam: how the manager becomes the leader before it starts
//! the leader-election group.
//!
//! Leader election (a Lease lock, controller-runtime's 15 s / 10 s / 2 s timings) is
//! a later piece of work (`crate::leaderelection`). Until it lands, [`campaign`]
//! treats the manager as elected at once — which is what controller-runtime does
//! when leader election is off — and says so in the log when it was asked for. The
//! elector will replace the body of [`campaign`]: wait for the lease, then start the
//! group and resolve `elected()`; on losing the lease, report an error so the manager
//! stops with a zero grace period.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::group::RunnableGroup;
use super::{Error, Options};

/// Becomes the leader (today: at once), then starts the leader-election runnables
/// and cancels `elected`.
pub(super) async fn campaign(
    opts: &Options,
    group: &Arc<RunnableGroup>,
    elected: &CancellationToken,
) -> Result<(), Error> {
    if opts.leader_election {
        tracing::warn!(
            id = %opts.leader_election_id,
            "leader election is not implemented yet; this manager acts as the leader"
        );
    }
    group.start().await?;
    elected.cancel();
    Ok(())
}
