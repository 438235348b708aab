//! Leader election on a `coordination.k8s.io/v1` Lease, compatible with client-go's
//! `leaderelection` and `resourcelock.LeaseLock`: a Go operator and a ctrl operator
//! configured with the same Lease honour each other's leadership.
//!
//! - `record`: [`LeaderElectionRecord`], the holder/duration/times/transitions a Lease carries;
//! - `lock`: the [`Lock`] trait (bring your own with [`ResourceLock`]) and [`LeaseLock`],
//!   which reads and writes a Lease with optimistic concurrency;
//! - `elector`: [`LeaderElector`], acquire / renew / release with client-go's timing rules;
//! - `observe`: what a candidate has seen of the lock (its own reads and writes only), and a
//!   watch that wakes a waiting candidate when the lease is freed;
//! - `resourcelock`: [`new_resource_lock`], the lock from manager options (id, namespace, identity);
//! - `metrics`: the `leader_election_master_status{name}` gauge.
//!
//! The manager (its `leader` seam) runs an elector when `Options::leader_election` is
//! set: leader-election runnables start once the lease is held, and losing it stops the
//! manager with its `Error::LeaderElectionLost`.

mod elector;
mod lock;
mod metrics;
mod observe;
mod record;
mod resourcelock;

use std::time::Duration;

pub use elector::{ElectorConfig, JITTER_FACTOR, LeaderElector};
pub use lock::{LeaseLock, Lock, ResourceLock};
pub use metrics::master_status;
pub use record::LeaderElectionRecord;
pub use resourcelock::{
    IN_CLUSTER_NAMESPACE_PATH, LockOptions, call_timeout, identity, in_cluster_namespace,
    new_resource_lock,
};

/// controller-runtime's default lease duration.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// controller-runtime's default renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// controller-runtime's default retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Why leader election could not be set up, or why one lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Leader election is on but no Lease name was given.
    #[error("LeaderElectionID must be configured (leader_election_id)")]
    MissingId,
    /// No namespace was given and none could be found in-cluster.
    #[error("unable to find leader election namespace: {0}")]
    Namespace(String),
    /// Lease duration, renew deadline and retry period do not fit together.
    #[error("invalid leader election timings: {0}")]
    InvalidTimings(&'static str),
    /// The API server refused or failed a lock call.
    #[error("leader election lock call failed: {0}")]
    Api(#[source] kube::Error),
    /// A lock call took longer than the call timeout.
    #[error("leader election lock call timed out after {0:?}")]
    Timeout(Duration),
    /// `update` was called before the lock was read or created.
    #[error("lease not initialized, call get or create first")]
    NotInitialized,
}
