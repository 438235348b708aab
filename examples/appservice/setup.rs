//! The operator's manager, wired the same way by `main` (in a cluster and in the
//! demo) and by the integration test: a [`Manager`] with the AppService controller
//! ([`super::controller`]) and kubebuilder's `healthz` / `readyz` ping checks, plus
//! the leader-election flags that name its Lease ([`LeaderElectionFlags`]; the
//! switch itself, `--leader-elect`, is in `ctrl::manager::Args`).

use std::path::Path;

use ctrl::healthz;
use ctrl::leaderelection::{IN_CLUSTER_NAMESPACE_PATH, in_cluster_namespace};
use ctrl::manager::{BoxError, Manager, Options};

use super::controller;

/// The Lease's default name, as kubebuilder derives it from the project's domain.
pub const DEFAULT_LEASE_NAME: &str = "appservice.app.example.com";

/// A manager on `client` with the AppService controller configured by `cfg`.
pub async fn manager(
    client: kube::Client,
    opts: Options,
    cfg: &controller::Config,
) -> Result<Manager, BoxError> {
    let mgr = Manager::new(client, opts)?;
    controller::setup(&mgr, cfg).await?;
    mgr.add_healthz_check("healthz", healthz::ping())?;
    mgr.add_readyz_check("readyz", healthz::ping())?;
    Ok(mgr)
}

/// Where the leader-election Lease lives. Two replicas overlap during an upgrade;
/// with `--leader-elect` only the one holding this Lease reconciles.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionFlags {
    /// The name of the Lease the replicas compete for.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_LEASE_NAME)]
    pub leader_election_id: String,
    /// The namespace of that Lease (default: the pod's namespace in a cluster,
    /// `default` outside one).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,
}

impl LeaderElectionFlags {
    /// `opts` with the Lease's name and namespace set, and release-on-cancel on (a
    /// replica that stops gracefully hands over at once).
    pub fn apply(&self, opts: Options) -> Options {
        let namespace = self
            .leader_election_namespace
            .clone()
            .or_else(|| in_cluster_namespace(Path::new(IN_CLUSTER_NAMESPACE_PATH)).ok());
        Options {
            leader_election_id: self.leader_election_id.clone(),
            leader_election_namespace: Some(namespace.unwrap_or_else(|| "default".into())),
            leader_election_release_on_cancel: true,
            ..opts
        }
    }
}
