//! Faults as a schedule: a [`FaultPlan`] names which [`FaultKind`]s may happen and how often;
//! the seed picks when and which. Each fault is one of ctrl-envtest's existing
//! [`Faults`](crate::Faults) (watch drops, 410 relists, 409s, 429s, 5xx), slow webhooks, or a replica's fate
//! (crash and restart, leave and join, leader loss), played by the simulation at its virtual
//! time.

use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;

use crate::faults::{FaultMatch, FaultStatus, Faults, Verb};

/// The longest a webhook call takes under [`FaultKind::SlowWebhook`].
pub const SLOW_WEBHOOK: Duration = Duration::from_secs(15);

/// A fault the simulation can play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultKind {
    /// Every open watch ends; clients resume from their last resourceVersion.
    WatchDrop,
    /// The watch history is compacted and every watch ends: resumes get `410 Expired` and the
    /// informers re-list.
    Relist,
    /// The next few updates and patches fail with `409 Conflict`.
    ConflictStorm,
    /// The next few requests fail with `429` and `Retry-After: 1`.
    Throttle,
    /// The next few requests fail with `500` or `503`.
    ServerError,
    /// The next few webhook calls served in memory (`Replica::serve_webhooks`) each take a
    /// seeded time of up to [`SLOW_WEBHOOK`]: past a webhook's `timeoutSeconds` (10 s by
    /// default) the call fails and its `failurePolicy` decides.
    SlowWebhook,
    /// Lease renewals fail for longer than a renew deadline: the leader loses its Lease.
    LeaderLoss,
    /// A replica crashes (its memory is gone, the store is kept) and restarts a little later.
    Crash,
    /// A replica leaves gracefully — it is stopped while its client still works, so it
    /// releases what it holds (its leader-election or shard Lease), as a rolling update's
    /// old pod does — and a new incarnation joins a little later (a shard leaving its ring
    /// and one joining).
    Leave,
}

/// Which faults a run may see, and how often.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    /// The kinds to draw from (none: no faults).
    pub kinds: Vec<FaultKind>,
    /// The mean virtual time between two faults.
    pub every: Duration,
    /// No fault starts after this virtual time, so that a run can settle.
    pub until: Duration,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 9] = [
        FaultKind::WatchDrop,
        FaultKind::Relist,
        FaultKind::ConflictStorm,
        FaultKind::Throttle,
        FaultKind::ServerError,
        FaultKind::SlowWebhook,
        FaultKind::LeaderLoss,
        FaultKind::Crash,
        FaultKind::Leave,
    ];
}

impl Default for FaultPlan {
    /// No faults.
    fn default() -> FaultPlan {
        FaultPlan {
            kinds: Vec::new(),
            every: Duration::from_secs(5),
            until: Duration::from_secs(60),
        }
    }
}

impl FaultPlan {
    /// Every kind of fault, one every `every` on average, until `until`.
    pub fn all(every: Duration, until: Duration) -> FaultPlan {
        FaultPlan {
            kinds: FaultKind::ALL.to_vec(),
            every,
            until,
        }
    }

    /// The schedule the seed's generator draws: (virtual time, fault), in time order.
    pub(crate) fn draw(&self, rng: &mut StdRng) -> Vec<(Duration, FaultKind)> {
        let mut out = Vec::new();
        if self.kinds.is_empty() || self.every.is_zero() {
            return out;
        }
        let mean = self.every.as_millis() as u64;
        let mut at = Duration::ZERO;
        loop {
            at += Duration::from_millis(rng.random_range(mean / 2..=mean + mean / 2));
            if at > self.until {
                return out;
            }
            out.push((at, self.kinds[rng.random_range(0..self.kinds.len())]));
        }
    }
}

/// Plays a fault that ctrl-envtest's [`Faults`] can inject; `n` is how many requests it hits.
/// Returns false for the kinds the simulation plays itself (crash, leave, slow webhooks).
pub(crate) fn inject(faults: &Faults, kind: FaultKind, n: usize, server_error: bool) -> bool {
    match kind {
        FaultKind::WatchDrop => faults.close_watches(),
        FaultKind::Relist => {
            faults.compact_history();
            faults.close_watches();
        }
        FaultKind::ConflictStorm => {
            for verb in [Verb::Update, Verb::Patch] {
                faults.fail_next(n, FaultMatch::any().verb(verb), FaultStatus::conflict());
            }
        }
        FaultKind::Throttle => {
            faults.fail_next(n, FaultMatch::any(), FaultStatus::too_many_requests(1));
        }
        FaultKind::ServerError => {
            let status = if server_error {
                FaultStatus::internal_error()
            } else {
                FaultStatus::service_unavailable()
            };
            faults.fail_next(n, FaultMatch::any(), status);
        }
        FaultKind::LeaderLoss => {
            // A renewal every retry period (2 s by default) for more than a renew deadline
            // (10 s): a dozen failed lease updates.
            let leases = FaultMatch::any().resource("leases").verb(Verb::Update);
            faults.fail_next(12, leases, FaultStatus::internal_error());
        }
        FaultKind::Crash | FaultKind::Leave | FaultKind::SlowWebhook => return false,
    }
    true
}
