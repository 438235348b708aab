//! Building the lock from manager options (controller-runtime's
//! `leaderelection.NewResourceLock`): the Lease name is required, the namespace
//! defaults to the one of the pod's service account, and the identity is
//! `<hostname>_<uuid>`, unique per process.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::{Error, LeaseLock};

/// Where a pod finds its own namespace.
pub const IN_CLUSTER_NAMESPACE_PATH: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// What the lock is built from (the leader-election part of the manager's options).
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    /// The Lease's name (`leader_election_id`); required.
    pub id: String,
    /// The Lease's namespace; `None` reads [`IN_CLUSTER_NAMESPACE_PATH`].
    pub namespace: Option<String>,
    /// Labels put on the Lease.
    pub labels: BTreeMap<String, String>,
    /// The renew deadline; API calls are bounded by max(renew deadline / 2, 1 s).
    pub renew_deadline: Duration,
}

/// A Lease lock for these options, with a fresh identity.
pub fn new_resource_lock(client: kube::Client, opts: &LockOptions) -> Result<LeaseLock, Error> {
    if opts.id.is_empty() {
        return Err(Error::MissingId);
    }
    let namespace = match opts.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        Some(ns) => ns.to_string(),
        None => in_cluster_namespace(Path::new(IN_CLUSTER_NAMESPACE_PATH))?,
    };
    Ok(LeaseLock::new(
        client,
        namespace,
        &opts.id,
        identity(),
        call_timeout(opts.renew_deadline),
    )
    .with_labels(opts.labels.clone()))
}

/// How long one leader-election API call may take: max(renew deadline / 2, 1 s).
pub fn call_timeout(renew_deadline: Duration) -> Duration {
    (renew_deadline / 2).max(Duration::from_secs(1))
}

/// A new identity, `<hostname>_<uuid>` (a random UUID from `ctrl_clock`: seeded in a
/// simulation).
pub fn identity() -> String {
    let id = uuid::Builder::from_random_bytes(ctrl_clock::random_u128().to_le_bytes());
    format!("{}_{}", hostname(), id.into_uuid())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The namespace in the service account's namespace file at `path`.
pub fn in_cluster_namespace(path: &Path) -> Result<String, Error> {
    match std::fs::read_to_string(path) {
        Ok(ns) if !ns.trim().is_empty() => Ok(ns.trim().to_string()),
        Ok(_) => Err(Error::Namespace(format!(
            "the namespace file {} is empty",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Namespace(
            "not running in-cluster, please specify leader_election_namespace".to_string(),
        )),
        Err(e) => Err(Error::Namespace(format!(
            "error reading namespace file {}: {e}",
            path.display()
        ))),
    }
}
