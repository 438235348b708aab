//! The operator's manager, wired the same way by `main` (in a cluster and in the
//! demo) and by the integration test: a [`Manager`] with the AppService controller
//! ([`super::controller`]) and kubebuilder's `healthz` / `readyz` ping checks, and
//! the name of its Lease (the flags are `ctrl::cli::leader`; the switch
//! itself, `--leader-elect`, is in `ctrl::manager::Args`).

use ctrl::healthz;
use ctrl::manager::{BoxError, Manager, Options};

use super::controller;

/// The Lease's default name, as kubebuilder derives it from the project's domain.
pub const DEFAULT_LEASE_NAME: &str = "appservice.app.example.com";

/// A manager on `client` with the AppService controller configured by `cfg`.
pub fn manager(
    client: kube::Client,
    opts: Options,
    cfg: &controller::Config,
) -> Result<Manager, BoxError> {
    let mgr = with_probes(client, opts)?;
    controller::setup(&mgr, cfg)?;
    Ok(mgr)
}

/// A manager on `client` with kubebuilder's `healthz` / `readyz` ping checks and no
/// controller yet (the sharded operator adds its own, `super::sharding`).
pub fn with_probes(client: kube::Client, opts: Options) -> Result<Manager, BoxError> {
    // Reads see the controller's own writes (client::CacheOptions; docs/cache-and-client.md).
    let mut opts = opts;
    opts.client.cache.read_your_writes_consistency_enabled = true;
    let mgr = Manager::new(client, opts)?;
    mgr.add_healthz_check("healthz", healthz::ping())?;
    mgr.add_readyz_check("readyz", healthz::ping())?;
    Ok(mgr)
}
