//! Leader election for an operator on the cli: the flags next to kubebuilder's
//! `--leader-elect` (which `ctrl::manager::Args` carries) that say which Lease the
//! replicas compete for, and how they become manager options. Run two replicas with
//! `--leader-elect`: one holds the Lease and runs the controllers, the other waits;
//! stop the leader and the other takes over (at once, since the leader releases the
//! Lease on a graceful stop). The controllers themselves know nothing of this: the
//! manager starts them only on the leader.

use std::path::Path;

use crate::leaderelection::{IN_CLUSTER_NAMESPACE_PATH, in_cluster_namespace};
use crate::manager::Options;

/// The Lease's namespace outside a cluster, when no flag names one.
pub const DEFAULT_OUT_OF_CLUSTER_NAMESPACE: &str = "default";

/// `opts` with the Lease in `POD_NAMESPACE` (the downward API's usual variable) when
/// leader election is on and no namespace is set: how an operator run outside its pod
/// (with its ServiceAccount's kubeconfig) finds the namespace a pod reads from its service
/// account. Without it, controller-runtime's rule stands: in-cluster, or an error.
pub fn namespace_from_env(mut opts: Options) -> Options {
    if opts.leader_election && opts.leader_election_namespace.is_none() {
        let ns = std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|n| !n.is_empty());
        opts.leader_election_namespace = ns;
    }
    opts
}

/// Where the leader-election Lease lives (`--leader-elect` itself is in
/// `ctrl::manager::Args`).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionFlags {
    /// The name of the Lease the replicas compete for (default: the operator's own,
    /// `<operator>.<its API group>`).
    #[arg(long, value_name = "NAME")]
    pub leader_election_id: Option<String>,
    /// The namespace of that Lease (default: the pod's namespace in a cluster,
    /// `default` outside one).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
}

impl LeaderElectionFlags {
    /// The Lease's namespace: the flag, else the service account's namespace file,
    /// else `default` (out of cluster).
    pub fn namespace(&self, namespace_file: &Path) -> String {
        if let Some(ns) = self.leader_election_namespace.as_deref() {
            return ns.to_string();
        }
        in_cluster_namespace(namespace_file)
            .unwrap_or_else(|_| DEFAULT_OUT_OF_CLUSTER_NAMESPACE.to_string())
    }

    /// `opts` with the Lease's name (the flag, else `default_id`) and namespace set
    /// and release-on-cancel on: a replica that stops gracefully hands over at once.
    /// Whether leader election is on at all is `opts.leader_election`
    /// (`--leader-elect`).
    pub fn apply(&self, default_id: &str, opts: Options) -> Options {
        Options {
            leader_election_id: self
                .leader_election_id
                .clone()
                .unwrap_or_else(|| default_id.to_string()),
            leader_election_namespace: Some(self.namespace(Path::new(IN_CLUSTER_NAMESPACE_PATH))),
            leader_election_release_on_cancel: true,
            ..opts
        }
    }
}

/// Says which Lease this replica competes for, when leader election is on.
pub fn log_leader_election(opts: &Options) {
    if opts.leader_election {
        let ns = opts
            .leader_election_namespace
            .as_deref()
            .unwrap_or(DEFAULT_OUT_OF_CLUSTER_NAMESPACE);
        tracing::info!("leader election on: Lease {ns}/{}", opts.leader_election_id);
    }
}
