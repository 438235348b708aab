//! Shard leases: each shard of a ring holds its own `coordination.k8s.io/v1` Lease,
//! named after its identity and labelled `alpha.sharding.timebertt.dev/controllerring=<ring>`
//! (upstream's `pkg/shard/lease` and `pkg/sharding/leases`).
//!
//! - [`ShardState`] / [`shard_state`]: what the sharder (`super::sharder`) reads from a
//!   lease — Ready, Expired, Uncertain (available for assignment), Dead, Orphaned — with
//!   upstream's timings: Expired once `renewTime + leaseDuration` has passed, Uncertain a
//!   further `leaseDuration` later, Dead once released or taken by the sharder
//!   (`holderIdentity != name`), Orphaned a minute after expiry of a dead lease.
//! - [`ShardLease`]: the shard-side [`Runnable`] that acquires and renews the lease with
//!   [`crate::leaderelection::LeaderElector`], and releases it on a graceful stop.
//!
//! The shard side (`super::shard`) builds a [`ShardLease`] for its identity.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::LABEL_CONTROLLER_RING;
use crate::error::BoxError;
use crate::leaderelection::{ElectorConfig, LeaderElector, LeaseLock, Lock};
use crate::manager::{Group, Runnable};

/// How long a dead lease lingers before it is Orphaned and deleted (upstream's `leaseTTL`).
pub const LEASE_TTL: Duration = Duration::from_secs(60);

/// The lease duration assumed when a lease misses its times (upstream's default).
const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// A shard's state as read from its lease (upstream's `leases.ShardState`, same strings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShardState {
    /// No lease, or a lease without the needed fields.
    Unknown,
    /// Dead for at least [`LEASE_TTL`] past expiry: the sharder deletes the lease.
    Orphaned,
    /// Released by the shard or acquired by the sharder: owns nothing.
    Dead,
    /// Expired at least one lease duration ago: the sharder takes the lease over.
    Uncertain,
    /// Expired less than one lease duration ago.
    Expired,
    /// Held and renewed.
    Ready,
}

impl ShardState {
    /// Whether objects may be assigned to (and stay on) a shard in this state
    /// (Uncertain, Expired, Ready).
    pub fn is_available(self) -> bool {
        self >= ShardState::Uncertain
    }

    /// The state's label value (`alpha.sharding.timebertt.dev/state`).
    pub fn as_str(self) -> &'static str {
        match self {
            ShardState::Unknown => "unknown",
            ShardState::Orphaned => "orphaned",
            ShardState::Dead => "dead",
            ShardState::Uncertain => "uncertain",
            ShardState::Expired => "expired",
            ShardState::Ready => "ready",
        }
    }
}

/// The state of `lease` at `now` (upstream's `leases.ToState`).
pub fn shard_state(lease: &Lease, now: Timestamp) -> ShardState {
    let spec = lease.spec.clone().unwrap_or_default();
    // Upstream's `ToTimes`: a lease missing any time counts as expiring now, with the
    // default duration.
    let (expiration, duration) = match (
        &spec.acquire_time,
        &spec.renew_time,
        spec.lease_duration_seconds,
    ) {
        (Some(_), Some(renew), Some(secs)) => {
            let d = SignedDuration::from_secs(i64::from(secs));
            (renew.0 + d, d)
        }
        _ => (now, span(DEFAULT_LEASE_DURATION)),
    };
    let to_expired = expiration.duration_since(now);
    let holder = spec.holder_identity.unwrap_or_default();
    if holder.is_empty() || Some(holder.as_str()) != lease.metadata.name.as_deref() {
        return if (to_expired + span(LEASE_TTL)).is_positive() {
            ShardState::Dead
        } else {
            ShardState::Orphaned
        };
    }
    if !(to_expired + duration).is_positive() {
        ShardState::Uncertain
    } else if !to_expired.is_positive() {
        ShardState::Expired
    } else {
        ShardState::Ready
    }
}

fn span(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or_default()
}

/// The labels of a shard lease of `ring`.
pub fn lease_labels(ring: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(LABEL_CONTROLLER_RING.to_string(), ring.to_string())])
}

/// The shard side's lease (upstream's `shard/lease`): acquired before the shard's
/// controllers start, renewed while they run, released after they stopped.
///
/// It runs in the manager's [`Group::Caches`]: the manager waits for it to hold the
/// lease ([`Runnable::wait_ready`]) before it starts controllers, and stops it only
/// after the controllers have stopped, so a released lease never has a reconcile
/// running behind it. A lost lease (renewals failing past the renew deadline) fails the
/// runnable, which stops the manager.
pub struct ShardLease {
    elector: tokio::sync::Mutex<Option<LeaderElector>>,
    held: watch::Sender<bool>,
    name: String,
}

impl std::fmt::Debug for ShardLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardLease")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ShardLease {
    /// The lease `namespace/id` of shard `id` in `ring`, with `cfg`'s timings. With
    /// `cfg.release_on_cancel` off, a graceful stop leaves the lease to expire, as a
    /// crash would.
    pub fn new(
        client: kube::Client,
        ring: &str,
        namespace: &str,
        id: &str,
        mut cfg: ElectorConfig,
    ) -> Result<Self, crate::leaderelection::Error> {
        cfg.name = format!("shard/{ring}/{id}");
        let lock = LeaseLock::new(
            client,
            namespace,
            id,
            id,
            crate::leaderelection::call_timeout(cfg.renew_deadline),
        )
        .with_labels(lease_labels(ring));
        let name = lock.describe();
        Ok(Self {
            elector: tokio::sync::Mutex::new(Some(LeaderElector::new(lock, cfg)?)),
            held: watch::Sender::new(false),
            name,
        })
    }
}

#[async_trait]
impl Runnable for ShardLease {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        let Some(mut elector) = self.elector.lock().await.take() else {
            return Err("the shard lease was started twice".into());
        };
        if !elector.acquire(&ctx).await {
            return Ok(());
        }
        tracing::info!(lease = %self.name, "Acquired shard lease");
        self.held.send_replace(true);
        let kept = elector.renew(&ctx).await;
        self.held.send_replace(false);
        if kept || ctx.is_cancelled() {
            tracing::info!(lease = %self.name, "Released shard lease");
            return Ok(());
        }
        Err(format!("shard lease {} lost", self.name).into())
    }

    fn group(&self) -> Group {
        Group::Caches
    }

    fn need_leader_election(&self) -> bool {
        false
    }

    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        let mut rx = self.held.subscribe();
        tokio::select! {
            r = rx.wait_for(|held| *held) => r.is_ok(),
            _ = ctx.cancelled() => false,
        }
    }

    fn name(&self) -> String {
        format!("shard lease {}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    use kube::api::ObjectMeta;

    use super::*;

    /// Lease `shard` held by `holder`, renewed `ago` seconds before `now`, 10 s duration.
    fn lease(holder: &str, now: Timestamp, ago: i64) -> Lease {
        let renew = MicroTime(now - SignedDuration::from_secs(ago));
        Lease {
            metadata: ObjectMeta {
                name: Some("shard".into()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(10),
                acquire_time: Some(renew.clone()),
                renew_time: Some(renew),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn states_follow_upstreams_timings() {
        let now = ctrl_clock::now();
        let cases = [
            ("shard", 0, ShardState::Ready),
            ("shard", 9, ShardState::Ready),
            ("shard", 11, ShardState::Expired),
            ("shard", 21, ShardState::Uncertain),
            ("", 0, ShardState::Dead),
            ("shardlease-controller", 30, ShardState::Dead),
            ("shardlease-controller", 71, ShardState::Orphaned),
        ];
        for (holder, ago, want) in cases {
            assert_eq!(
                shard_state(&lease(holder, now, ago), now),
                want,
                "{holder} {ago}s"
            );
        }
        assert!(ShardState::Uncertain.is_available());
        assert!(!ShardState::Dead.is_available());
        assert_eq!(ShardState::Orphaned.as_str(), "orphaned");
    }
}
