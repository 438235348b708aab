//! [`Error`]: why the manager could not be built, refused a call, or stopped.

use std::time::Duration;

use crate::error::BoxError;
use crate::metricsserver::ExtraHandlerError;

/// Why the manager could not be built, refused a call, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `start` was called a second time.
    #[error("manager already started")]
    AlreadyStarted,
    /// A runnable was added after the manager began to stop.
    #[error("can't accept new runnable as stop procedure is already engaged")]
    Stopped,
    /// A runnable's `start` returned an error; the manager stopped because of it.
    #[error("runnable {name} failed: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// What it returned.
        #[source]
        source: BoxError,
    },
    /// A runnable panicked; the manager stopped because of it.
    #[error("runnable {name} panicked: {message}")]
    Panicked {
        /// The runnable's name.
        name: String,
        /// The panic message, if it was a string.
        message: String,
    },
    /// A runnable (a cache: its sync) reported it could not become ready.
    #[error("runnable {name} in group {group} could not become ready")]
    NotReady {
        /// The group it was in.
        group: &'static str,
        /// The runnable's name.
        name: String,
    },
    /// Runnables were still running when `graceful_shutdown_timeout` ran out; they
    /// were aborted, and so were the groups after the one that overran it, without
    /// waiting.
    #[error(
        "failed waiting for all runnables to end within grace period of {timeout:?}: still running: {}",
        pending.join(", ")
    )]
    GracefulShutdownTimeout {
        /// The grace period.
        timeout: Duration,
        /// The runnables of the overrunning group that had not returned.
        pending: Vec<String>,
    },
    /// More than one error: a runnable's, then the shutdown's (Go's aggregate).
    #[error("[{}]", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Multiple(Vec<Error>),
    /// The custom leader-election lock was already taken by another manager.
    #[error("the leader election resource lock is already used by another manager")]
    ResourceLockTaken,
    /// The client for `leader_election_config` could not be built.
    #[error("unable to create the leader election client: {0}")]
    LeaderElectionClient(#[source] kube::Error),
    /// A health or readiness check was added after `start`.
    #[error("unable to add new checker because healthz endpoint has already been created")]
    CheckAfterStart,
    /// A metrics handler was added after `start`.
    #[error("unable to add new metrics handler because metrics endpoint has already been created")]
    MetricsHandlerAfterStart,
    /// The metrics server's TLS or filter could not be set up.
    #[error("failed to start metrics server: {0}")]
    MetricsServer(String),
    /// A metrics extra handler was refused.
    #[error(transparent)]
    MetricsHandler(#[from] ExtraHandlerError),
    /// A server's listener could not be bound.
    #[error("failed to listen on {addr:?} for the {kind} server: {source}")]
    Bind {
        /// Which server.
        kind: &'static str,
        /// The configured address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// This manager was the leader and lost the lease (or could not renew it in
    /// time); it stopped at once, without a grace period, so the process should exit.
    #[error("leader election lost")]
    LeaderElectionLost,
    /// Leader election could not be set up (no Lease name, no namespace, bad timings).
    #[error(transparent)]
    LeaderElection(#[from] crate::leaderelection::Error),
    /// No Kubernetes client configuration could be loaded.
    #[error(transparent)]
    Config(#[from] super::ConfigError),
}

impl Error {
    /// Joins a run error and a shutdown error the way Go's `kerrors.NewAggregate` does.
    pub(super) fn join(run: Result<(), Error>, stop: Result<(), Error>) -> Result<(), Error> {
        match (run, stop) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(Error::Multiple(vec![a, b])),
        }
    }

    /// The errors inside, flattening [`Error::Multiple`].
    pub fn errors(&self) -> Vec<&Error> {
        match self {
            Error::Multiple(v) => v.iter().flat_map(Error::errors).collect(),
            e => vec![e],
        }
    }
}
