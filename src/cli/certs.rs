//! The operator's webhook certificates on a configured cluster: with webhooks registered
//! and no `--webhook-cert-path`, it runs its own
//! [`CertRotator`], named as its manifests name things
//! ([`crate::manifests::certs`]): the Secret `<name>-webhook-server-cert` and the webhook
//! Service `<name>-webhook-service` in the namespace it runs in. With
//! `--webhook-cert-path` it serves the files it is given (cert-manager's, or your own);
//! the local API server gets self-signed ones (`super::envtest`).

use crate::certrotator::CertRotator;
use crate::manager::{Args, BoxError, Manager};
use crate::manifests::{Naming, certs};

/// Where a pod finds its namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Adds the cert rotator of operator `name` to `mgr` if it rotates its own certificates
/// ([`certs::rotates`]); returns it, or `None`.
pub fn add_rotator(
    name: &str,
    client: kube::Client,
    mgr: &Manager,
    args: &Args,
) -> Result<Option<CertRotator>, BoxError> {
    let webhooks = mgr.webhook_registrations();
    if !certs::rotates(args, &webhooks) {
        return Ok(None);
    }
    let naming = Naming {
        namespace: namespace(name),
        ..Naming::deployed(name)
    };
    let server = mgr.webhook_server();
    let rotator = CertRotator::new(
        client,
        certs::rotator_options(&naming, &webhooks, server.options()),
    );
    rotator.add_to(mgr)?;
    tracing::info!(
        secret = %format!("{}/{}", naming.namespace, rotator.options().secret_name),
        "webhook certificates from the cert rotator (--webhook-cert-path not given)"
    );
    Ok(Some(rotator))
}

/// The namespace the operator runs in: `POD_NAMESPACE`, else its pod's service account's,
/// else `<name>-system` (where its manifests deploy it).
pub fn namespace(name: &str) -> String {
    let from_env = std::env::var("POD_NAMESPACE").ok();
    let from_pod = || std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok();
    from_env
        .or_else(from_pod)
        .map(|ns| ns.trim().to_string())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| format!("{name}-system"))
}
