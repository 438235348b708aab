//! The operator's manager, wired the same way by `main` (in a cluster and in the
//! demo) and by the integration tests: a [`Manager`] with the controller and its
//! probe ticker ([`super::controller`]) and, when asked, the admission webhooks
//! ([`super::webhooks`]) on the manager's webhook server. Leader election and the
//! webhook server itself come in through the [`Options`].

use ctrl::manager::{BoxError, Manager, Options};

use super::{controller, webhooks};

/// A manager on `client` with the StorageBucket controller (configured by `cfg`)
/// and, if `with_webhooks`, the defaulting and validating webhooks registered on
/// its webhook server (`opts.webhook_server`, or the default one on port 9443),
/// with a readiness check that the server accepts connections.
pub fn manager(
    client: kube::Client,
    opts: Options,
    cfg: &controller::Config,
    with_webhooks: bool,
) -> Result<Manager, BoxError> {
    // Reads see the controller's own writes (client::CacheOptions; docs/cache-and-client.md).
    let mut opts = opts;
    opts.client.cache.read_your_writes_consistency_enabled = true;
    let mgr = Manager::new(client, opts)?;
    controller::setup(&mgr, cfg)?;
    if with_webhooks {
        webhooks::setup(&mgr)?;
        // Ready only once the webhook server accepts TLS connections (kubebuilder's
        // `mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker())`).
        mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker())?;
    }
    Ok(mgr)
}
